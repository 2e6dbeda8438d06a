"""Lifecycle of the embedded server: start, adopt, stop, and survive kill -9.

Each test uses its own data dir (its own cluster), separate from the run's server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from app.db.embedded import EmbeddedPostgres

pytestmark = pytest.mark.slow

HOLDER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from app.db.embedded import EmbeddedPostgres
    server = EmbeddedPostgres(Path(sys.argv[1]))
    server.start()
    print("adopted" if server.adopted else "started", flush=True)
    if sys.argv[2] == "hold":
        time.sleep(600)
    """
)


def run_holder(root: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER_SCRIPT, str(root), mode],
        stdout=subprocess.PIPE,
        text=True,
    )


def postgres_processes(root: Path) -> list[psutil.Process]:
    pgdata = (root / "pgdata").resolve()
    found = []
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "postgres" and Path(proc.cwd()) == pgdata:
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "embedded"
    yield path
    EmbeddedPostgres(path).stop()


def test_start_initialises_and_release_stops(root: Path) -> None:
    server = EmbeddedPostgres(root)
    server.start()
    assert not server.adopted
    status = server.status()
    assert status is not None and status.state == "ready"
    with psycopg.connect(server.conninfo()) as conn:
        version = conn.execute("SHOW server_version").fetchone()
    assert version is not None and version[0].startswith("18")
    assert (server.socket_dir.stat().st_mode & 0o777) == 0o700
    server.release()
    assert server.status() is None
    assert postgres_processes(root) == []


def test_second_process_adopts_and_leaves_server_to_the_first(root: Path) -> None:
    server = EmbeddedPostgres(root)
    server.start()
    pid = server.status().pid  # type: ignore[union-attr]
    other = run_holder(root, "once")
    out, _ = other.communicate(timeout=60)
    assert out.strip() == "adopted"
    status = server.status()
    assert status is not None and status.pid == pid, "the adopter must not stop our server"
    server.release()
    assert server.status() is None


def test_holder_killed_by_sigkill_does_not_leak_the_server(root: Path) -> None:
    first = run_holder(root, "hold")
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "started"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    server = EmbeddedPostgres(root)
    assert server.status() is not None, "postgres outlives a killed holder"
    server.start()
    assert server.adopted
    server.release()  # the dead holder must not count: we were the last living one
    assert server.status() is None
    assert postgres_processes(root) == []


def test_sigterm_to_a_holder_stops_the_server_cleanly(root: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "embedded", "status"],
        env={**os.environ, "ELEPHANT_DATA_DIR": str(root.parent)},
    )
    holder.wait(timeout=30)  # status alone must not start anything
    assert EmbeddedPostgres(root).status() is None
    script = HOLDER_SCRIPT.replace(
        "server.start()",
        "import signal\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(143))\nserver.start()",
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(root), "hold"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert EmbeddedPostgres(root).status() is None
    assert postgres_processes(root) == []


def _write_rows(server: EmbeddedPostgres, count: int) -> None:
    with psycopg.connect(server.conninfo()) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS durable (n int PRIMARY KEY)")
        for n in range(count):
            conn.execute("INSERT INTO durable VALUES (%s)", (n,))
            conn.commit()


def test_kill_9_of_postgres_recovers_every_committed_row(root: Path) -> None:
    server = EmbeddedPostgres(root)
    server.start()
    _write_rows(server, 200)
    # an open, uncommitted transaction must vanish, not half-apply
    pending = psycopg.connect(server.conninfo())
    pending.execute("INSERT INTO durable VALUES (100000)")
    killed = postgres_processes(root)
    for proc in killed:
        proc.kill()
    # SIGKILL is sent, not done: on a busy machine the postmaster may outlive its backends
    # for a moment, so wait (bounded) until every killed process is gone
    _, alive = psutil.wait_procs(killed, timeout=30)
    assert not alive, f"postgres processes survived SIGKILL: {alive}"
    with pytest.raises(psycopg.OperationalError):
        pending.execute("SELECT 1")
    assert server.status() is None
    restarted = EmbeddedPostgres(root)
    restarted.start()
    assert not restarted.adopted
    with psycopg.connect(restarted.conninfo()) as conn:
        row = conn.execute("SELECT count(*), max(n) FROM durable").fetchone()
    assert row == (200, 199)
    assert "database system was interrupted" in restarted.log_file.read_text() or (
        "not properly shut down" in restarted.log_file.read_text()
    )
    restarted.release()
    server.release()


def test_kill_9_of_postmaster_only_clears_orphaned_backends(root: Path) -> None:
    server = EmbeddedPostgres(root)
    server.start()
    _write_rows(server, 10)
    postmaster = server.status().pid  # type: ignore[union-attr]
    os.kill(postmaster, signal.SIGKILL)
    time.sleep(0.2)
    server.release()  # nothing to stop: the postmaster is gone
    again = EmbeddedPostgres(root)
    again.start()
    with psycopg.connect(again.conninfo()) as conn:
        count = conn.execute("SELECT count(*) FROM durable").fetchone()
    assert count == (10,)
    again.release()


def test_kill_9_of_the_app_keeps_committed_rows_and_server_is_adopted(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from app.config import Settings
        from app.db import Database
        db = Database(Settings.model_validate({"data_dir": sys.argv[1]}))
        db.open()
        for n in range(50):
            with db.tenant("acme") as conn:
                conn.execute(
                    "INSERT INTO memories (tenant_id, kind, text, content_hash) "
                    "VALUES ('acme', 'note', %s, %s)", (f"note {n}", f"h{n}"))
        print("written", flush=True)
        time.sleep(600)
        """
    )
    app = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert app.stdout is not None and app.stdout.readline().strip() == "written"
        app.kill()
        app.wait(timeout=10)
        from app.config import Settings
        from app.db import Database

        db = Database(Settings.model_validate({"data_dir": str(tmp_path)}))
        db.open()
        assert db.embedded is not None and db.embedded.adopted
        with db.tenant("acme") as conn:
            count = conn.execute("SELECT count(*) FROM memories").fetchone()
        assert count == (50,)
        db.close()
        assert EmbeddedPostgres(tmp_path / "embedded").status() is None
    finally:
        app.kill()
        EmbeddedPostgres(tmp_path / "embedded").stop()


def test_tcp_requires_a_password(tmp_path: Path) -> None:
    from app.config import Settings
    from app.db import Database
    from tests.conftest import free_port

    port = free_port()
    settings = Settings.model_validate(
        {"data_dir": str(tmp_path), "embedded": {"tcp": True, "port": port}}
    )
    db = Database(settings)
    db.open()
    try:
        assert db.embedded is not None
        password = db.embedded.password
        assert ((tmp_path / "embedded" / "password").stat().st_mode & 0o777) == 0o600
        app_user = settings.database.app_role
        with psycopg.connect(db.embedded.tcp_conninfo(app_user, "elephant")) as conn:
            user = conn.execute("SELECT current_user").fetchone()
        assert user == (app_user,)
        for attempt in (
            f"host=127.0.0.1 port={port} user={app_user} dbname=elephant password=wrong",
            f"host=127.0.0.1 port={port} user={app_user} dbname=elephant password=",
            f"host=127.0.0.1 port={port} user=postgres dbname=elephant password={password}",
        ):
            with pytest.raises(
                psycopg.OperationalError, match="password authentication failed|no password"
            ):
                psycopg.connect(attempt, connect_timeout=5)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        ("delete global/pg_control", "global/pg_control"),
        ("corrupt PG_VERSION", "incompatible"),
        ("delete PG_VERSION", "no PG_VERSION"),
    ],
)
def test_a_broken_data_dir_says_what_failed_and_what_to_do(
    root: Path, damage: str, named: str
) -> None:
    """Found by an outside attack: a damaged data dir printed 'the embedded postgres did
    not start: None'. The message now quotes what failed (the server's log from this start,
    or the missing PG_VERSION), names the data dir and says how to set it aside."""
    from app.errors import DatabaseUnavailable

    server = EmbeddedPostgres(root)
    server.start()
    server.release()
    pgdata = root / "pgdata"
    if damage == "delete global/pg_control":
        (pgdata / "global" / "pg_control").unlink()
    elif damage == "corrupt PG_VERSION":
        (pgdata / "PG_VERSION").write_text("9\n")
    else:
        (pgdata / "PG_VERSION").unlink()
    with pytest.raises(DatabaseUnavailable) as caught:
        EmbeddedPostgres(root).start()
    message = caught.value.message
    assert "None" not in message, message
    assert named in message and str(pgdata.resolve()) in message, message
    assert f"mv {pgdata.resolve()} {pgdata.resolve()}.broken" in message, message
    assert "database system was shut down" not in message, message  # only this start's lines
    assert postgres_processes(root) == []
