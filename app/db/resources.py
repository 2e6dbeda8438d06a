"""Where the migrations and SQL files live, and how a SQL file takes its fragments.

In the repository they are the top-level folders ``migrations/`` and ``sql/``;
installed, they are the packages ``app.migrations`` and ``app.sql`` (see
pyproject.toml), so both layouts resolve through importlib.

A SQL file may hold *slots*: a line holding only ``{name}``. ``splice`` fills each
with the fragment file ``<name>.sql`` beside the file that holds the slot (or the
file the caller names for that slot), less the fragment's header comment, indented
like the slot. So a filter that several statements share is written once
(sql/retrieval/memory_filters.sql, sql/retrieval/fact_filters.sql) and the statement
the database plans is the same as if it had been pasted in by hand: no function
call, no migration. Statements live by feature, ``sql/<feature>/<name>.sql``
(CONTRIBUTING.md).

``sql/objects/`` holds the *re-applied* objects: the current definition of views,
functions and comments, run in file-name order after every upgrade to head (see
migrations/README.md). Migrations never read files from here or anywhere else.
"""

from __future__ import annotations

import re
import textwrap
from functools import cache
from importlib.resources import files
from pathlib import Path

_SLOT = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[a-z_]+)\}[ \t]*$", re.MULTILINE)
_MAX_DEPTH = 4  # a fragment may hold slots, a few levels deep; deeper is a cycle
OBJECTS_DIR = "objects"


def _package_dir(package: str) -> Path:
    return Path(str(files(package)))


def migrations_dir() -> Path:
    return _package_dir("app.migrations")


def sql_dir() -> Path:
    return _package_dir("app.sql")


def object_files() -> list[Path]:
    """``sql/objects/*.sql`` in the order they are applied: by name (``10_...`` first).

    None found is an error, not an empty list: a package built without them would
    silently keep the views as an old migration made them."""
    found = sorted((sql_dir() / OBJECTS_DIR).glob("*.sql"), key=lambda path: path.name)
    if not found:
        raise FileNotFoundError(
            f"no SQL objects in {sql_dir() / OBJECTS_DIR}: the package lacks sql/objects/*.sql"
        )
    return found


@cache
def load_sql(name: str) -> str:
    """Text of ``sql/<name>``; analysts read the same file the code runs."""
    return (sql_dir() / name).read_text()


def fragment(name: str) -> str:
    """``sql/<name>`` as a slot takes it: without its leading comment lines (the header
    that documents it) and without surrounding blank lines."""
    lines = load_sql(name).strip("\n").splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
        lines.pop(0)
    return "\n".join(lines).rstrip()


def splice(text: str, folder: str = "", **chosen: str) -> str:
    """``text`` with every slot filled (see the module docstring); its fragments are read
    from ``sql/<folder>/``, the folder of the file ``text`` came from.

    ``chosen`` maps a slot name to the fragment file it takes instead of
    ``<name>.sql`` (hybrid_search.sql's ``{keyword_lane}``: keyword_bm25.sql or
    keyword_tsvector.sql). Fragments may hold slots of their own.
    """
    return _fill(text, folder, chosen, depth=0)


def _fill(text: str, folder: str, chosen: dict[str, str], depth: int) -> str:
    if depth > _MAX_DEPTH:
        raise ValueError("SQL slots nested too deep: does a fragment include itself?")

    def one(slot: re.Match[str]) -> str:
        file = chosen.get(slot["name"], f"{slot['name']}.sql")
        body = _fill(fragment(f"{folder}/{file}" if folder else file), folder, chosen, depth + 1)
        return textwrap.indent(body, slot["indent"])

    return _SLOT.sub(one, text)


def load_statement(name: str, **chosen: str) -> str:
    """``sql/<name>`` with its slots filled from its own folder, ready to run."""
    folder = name.rpartition("/")[0]
    return splice(load_sql(name), folder, **chosen)
