"""A real PgBouncer in transaction pooling mode in front of the run's embedded Postgres.

Debian's ``pgbouncer`` (1.18; ``make test`` installs it) listens on a free loopback
port and reaches the server over its unix socket, where the server trusts local
logins; PgBouncer trusts its clients too (loopback only), but still wants every user
named in its auth file. One ``*`` database entry serves every database the tests
create. PgBouncer refuses to run as root: as root it runs as the server's own system
user, which may enter the server's 0700 socket directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
import pytest

from app.db.embedded import SERVICE_USER, SUPERUSER, EmbeddedPostgres

PGBOUNCER = os.environ.get("ELEPHANT_TEST_PGBOUNCER_BIN", "/usr/sbin/pgbouncer")
START_TIMEOUT_S = 15.0


def pgbouncer_binary() -> str:
    """The pgbouncer executable, or a failure that says how to get it."""
    found = shutil.which(PGBOUNCER) or shutil.which("pgbouncer")
    if found is None:
        if os.environ.get("ELEPHANT_TEST_PGBOUNCER") == "skip":
            pytest.skip("no pgbouncer (ELEPHANT_TEST_PGBOUNCER=skip)")
        pytest.fail(
            f"{PGBOUNCER} is missing: `make pgbouncer` (part of `make test`) installs Debian's "
            "pgbouncer (apt-get); ELEPHANT_TEST_PGBOUNCER=skip skips the tests that need it"
        )
    return found


class PgBouncer:
    """One pgbouncer process with its own directory (config, auth file, log, pid)."""

    def __init__(
        self,
        root: Path,
        server: EmbeddedPostgres,
        port: int,
        *,
        pool_size: int,
        users: Sequence[str],
    ) -> None:
        self.root = root
        self.server = server
        self.port = port
        self.pool_size = pool_size
        self.users = (SUPERUSER, *users)  # the superuser: the readiness check (and tests)
        self.log_file = root / "pgbouncer.log"
        self._process: subprocess.Popen[bytes] | None = None

    def url(self, user: str, dbname: str) -> str:
        """A postgresql:// URL through the pooler (no password: trust on loopback; every
        user must be one of ``users``)."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> PgBouncer:
        binary = pgbouncer_binary()
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "pgbouncer.ini"
        auth = self.root / "users.txt"
        auth.write_text("".join(f'"{user}" ""\n' for user in self.users))
        config.write_text(
            "[databases]\n"
            f"* = host={self.server.socket_dir} port={self.server.port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {auth}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\n"
            "min_pool_size = 0\n"
            "reserve_pool_size = 0\n"
            "max_client_conn = 500\n"
            # Every test module has databases of its own: idle server connections to
            # the finished ones go soon, so the server's max_connections is never reached.
            "server_idle_timeout = 5\n"
            # A client waiting this long for a server connection gets an error, not a hang.
            "query_wait_timeout = 60\n"
            f"logfile = {self.log_file}\n"
            f"pidfile = {self.root / 'pgbouncer.pid'}\n"
        )
        command = [binary, str(config)]
        if os.geteuid() == 0:  # pgbouncer will not run as root
            for path in (self.root, config, auth):
                shutil.chown(path, SERVICE_USER)
            command = [binary, "-u", SERVICE_USER, str(config)]
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        assert self._process is not None
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited ({self._process.returncode}): {self.log()}")
            try:
                with psycopg.connect(self.url(SUPERUSER, "postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pgbouncer did not answer: {exc}; {self.log()}") from None
                time.sleep(0.1)

    def log(self) -> str:
        return self.log_file.read_text()[-2000:] if self.log_file.exists() else "(no log)"

    def stop(self) -> None:
        """SIGINT: pgbouncer closes its connections and exits at once."""
        if self._process is None:
            return
        self._process.send_signal(signal.SIGINT)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None
