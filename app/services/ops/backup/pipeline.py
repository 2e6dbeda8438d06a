"""pg_restore's script into psql in ONE transaction, committed only when both succeed.

``psql --single-transaction`` commits once its input ends without an SQL error; it
cannot know that the pg_restore feeding it failed halfway (a damaged archive, a full
disk), and would commit what it received. So this process stands between them: it
copies pg_restore's output into psql, appends what must run in the same transaction
(the AGE fix) only when pg_restore ended well, and otherwise kills psql before its
input ends: the server rolls the open transaction back and nothing is restored.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import IO

from app.services.ops.backup.tools import ToolFailed, Tools

CHUNK = 1 << 16


def restore(
    chosen: Tools, target: str, env: dict[str, str], dump: Path, after: str, work: Path
) -> None:
    """Run ``dump`` through pg_restore and psql into ``target``, then ``after`` (SQL), as
    one transaction; raise ToolFailed (nothing committed) if either tool fails."""
    psql = [str(chosen.path("psql")), "--no-psqlrc", "--quiet", "--no-password"]
    psql += ["--set=ON_ERROR_STOP=1", "--single-transaction", f"--dbname={target}", "--file=-"]
    dumping = [str(chosen.path("pg_restore")), "--file=-", str(dump)]
    with (
        (work / "pg_restore.err").open("w+") as dump_err,
        (work / "psql.err").open("w+") as psql_err,
    ):
        producer = subprocess.Popen(dumping, stdout=subprocess.PIPE, stderr=dump_err, env=env)
        consumer = subprocess.Popen(
            psql, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=psql_err, env=env
        )
        assert producer.stdout is not None and consumer.stdin is not None
        fed = _copy(producer.stdout, consumer.stdin)
        dumped = producer.wait()
        if dumped != 0 or not fed:
            consumer.kill()  # before its input ends: no COMMIT is ever sent
            consumer.wait()
            producer.kill()
            producer.wait()
            failed, err = ("pg_restore", dump_err) if dumped != 0 else ("psql", psql_err)
            raise ToolFailed(f"{failed} failed, nothing was restored: {_tail(err)}")
        try:
            consumer.stdin.write(b"\n" + after.encode() + b"\n")
            consumer.stdin.close()
        except BrokenPipeError:
            pass  # psql stopped on an error: its exit status says so
        if consumer.wait() != 0:
            raise ToolFailed(f"psql failed, nothing was restored: {_tail(psql_err)}")


def _copy(source: IO[bytes], sink: IO[bytes]) -> bool:
    """Copy until ``source`` ends; False if ``sink`` closed first (psql stopped)."""
    try:
        while chunk := source.read(CHUNK):
            sink.write(chunk)
    except BrokenPipeError:
        return False
    finally:
        source.close()
    return True


def _tail(err: IO[str], lines: int = 12) -> str:
    err.seek(0)
    return "\n".join(err.read().strip().splitlines()[-lines:]) or "no output"
