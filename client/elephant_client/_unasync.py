"""Write ``_sync.py`` from ``_async.py``: one source for both clients.

Run ``python -m elephant_client._unasync`` after editing ``_async.py``; the tests fail
when the two differ (``--check`` says so without writing). The rewrite is textual
(``async def`` to ``def``, ``await`` dropped, the async types swapped), then ruff
formats the result, so the generated file passes the same lint as the rest.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = HERE / "_async.py"
TARGET = HERE / "_sync.py"

HEADER = '''"""The synchronous client. GENERATED from ``_async.py`` by ``python -m
elephant_client._unasync``: do not edit; edit ``_async.py`` and regenerate."""
'''

REPLACEMENTS = [
    (
        "from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence",
        "from collections.abc import Callable, Iterator, Mapping, Sequence",
    ),
    ("import asyncio\n", "import time\n"),
    ("asyncio.sleep(", "time.sleep("),
    ("Awaitable[Page[T]]", "Page[T]"),
    ("for item in page.items:\n                yield item", "yield from page.items"),
    ("AsyncIterator", "Iterator"),
    ("AsyncElephant", "Elephant"),
    ("httpx.AsyncClient", "httpx.Client"),
    ("httpx.AsyncBaseTransport", "httpx.BaseTransport"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose", "close"),
    ("async def ", "def "),
    ("async with", "with"),
    ("await ", ""),
    ("Asynchronous client", "Synchronous client"),
]


def generate() -> str:
    text = SOURCE.read_text()
    docstring_end = text.index('"""', 3) + 3
    text = HEADER + "\n" + text[docstring_end:].lstrip("\n")
    for old, new in REPLACEMENTS:
        if old not in text:
            raise SystemExit(f"_unasync: {old!r} no longer occurs in _async.py: update the table")
        text = text.replace(old, new)
    for leftover in ("async ", "await", "Async"):
        if leftover in text:
            line = next(line for line in text.splitlines() if leftover in line)
            raise SystemExit(f"_unasync: {leftover!r} left in the sync client: {line.strip()}")
    return _ruff_format(text)


def _ruff_format(text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"_unasync: ruff format failed: {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str]) -> int:
    generated = generate()
    if "--check" in argv:
        if TARGET.exists() and TARGET.read_text() == generated:
            return 0
        print(f"{TARGET} is out of date: run python -m elephant_client._unasync")
        return 1
    TARGET.write_text(generated)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
