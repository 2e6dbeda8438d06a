"""Every tenant statement names ``tenant_id`` itself, beside row-level security.

Row-level security confines a statement to the tenant of ``elephant.tenant_id``, but
Citus cannot route on a setting: only a statement that names ``tenant_id`` goes to the
one shard holding the tenant (docs/scale-out.md, "Application changes Citus needs").
This test reads the code, without a database: every SQL text in ``app/`` (string
literals, implicit and ``+`` concatenations, f-strings and ``.format()`` calls, psycopg
``sql.SQL`` ones included, found with ``ast``) and every statement of ``sql/``
that reads or writes a table or view with a ``tenant_id`` column must tie each such
reference to the tenant (``m.tenant_id`` as a filter or a join, ``tenant_id`` among
an INSERT's columns), and an upsert's conflict target must hold it. The few statements that rightly run across tenants are listed
in ``ALLOWED``, each with its reason; an entry that no longer matches exactly its
statements fails too. One test checks ``TENANT_RELATIONS`` against the migrated
schema, so a new tenant table cannot slip past. Out of scope: functions and views
defined by migrations and ``sql/objects/`` (they run inside the caller's statement).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from app.db import Database
from app.db.resources import OBJECTS_DIR, fragment

ROOT = Path(__file__).parents[2]
APP = ROOT / "app"
SQL_DIR = ROOT / "sql"

# Tables and views with a tenant_id column (checked against the schema below).
TENANT_RELATIONS = frozenset(
    {
        "access_stats",
        "admission_log",
        "analyst_grants",
        "api_keys",
        "audit_log",
        "contradictions",
        "conversations",
        "current_facts",
        "entity_mentions",
        "fact_entities",
        "facts",
        "feedback",
        "graph_entities",
        "graph_relations",
        "graphs",
        "handoffs",
        "jobs",
        "kg_entities",
        "kg_relations",
        "llm_usage",
        "maintenance_runs",
        "memories",
        "memory_entities",
        "passages",
        "tenant_vector_ways",
        "turns",
    }
)

# A reference to a relation: FROM / JOIN / UPDATE / INTO / COPY / TRUNCATE <name>. A name
# composed in by psycopg (``FROM {}``, ``INTO {table}``) is a dynamic reference.
_REFERENCE = re.compile(
    r"\b(?P<verb>FROM|JOIN|UPDATE|INTO|COPY|TRUNCATE(?:\s+TABLE)?)\s+(?:ONLY\s+)?"
    r"(?:public\s*\.\s*)?(?:\"?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\"?|(?P<slot>\{[^}]*\}))"
    r"(?:\s+(?:AS\s+)?(?P<alias>\w+|\{\w+\}))?",
    re.IGNORECASE,
)
# Words that may follow a relation's name and are not its alias.
_NOT_ALIAS = frozenset(
    [
        "where",
        "on",
        "join",
        "left",
        "right",
        "inner",
        "cross",
        "full",
        "natural",
        "lateral",
        "group",
        "order",
        "limit",
        "offset",
        "set",
        "using",
        "union",
        "except",
        "intersect",
        "window",
        "returning",
        "for",
        "values",
        "select",
        "with",
        "having",
        "do",
        "default",
        "tablesample",
    ]
)
_SQL_VERB = re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|COPY|TRUNCATE|WITH)\b")
# tenant_id named as a filter or a join (``x.tenant_id = ...``, ``= x.tenant_id``,
# ``tenant_id IN``): a tenant_id that is only selected or returned routes nothing.
_TENANT_FILTER = re.compile(
    r"\btenant_id\s*(?:=|\bIN\b)|(?:=|\bIN\b)\s*\(?\s*(?:\w+\.)?tenant_id\b", re.IGNORECASE
)
# An INSERT or COPY whose column list holds tenant_id: Citus routes each row by its value.
_TENANT_COLUMN = re.compile(
    r"\b(?:INTO|COPY)\s+(?:public\s*\.\s*)?(?:\w+|\{\w*\})(?:\s+AS\s+\w+)?\s*\([^)]*\btenant_id\b",
    re.IGNORECASE,
)
_SLOT = re.compile(r"^[ \t]*\{(?P<name>[a-z_]+)\}[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Statement:
    file: str  # relative to the repository
    line: int
    text: str  # whitespace collapsed

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text[:300]}"


@dataclass(frozen=True)
class Allowed:
    """A statement that rightly runs without naming a tenant: ``fragment`` must occur in
    exactly ``count`` flagged statements of ``file``."""

    file: str
    fragment: str
    reason: str
    count: int = 1


_AGE = (
    "an Apache AGE label table of the tenant's own graph schema (no tenant_id column: "
    "the schema is the tenant's; AGE does not run on Citus, docs/scale-out.md)"
)
_PROBE = (
    "the pg_textsearch probe and rebuild check the whole BM25 index, every tenant's rows, "
    "as the migrator at start-up and in doctor (app/db/keyword_index.py)"
)
_REEMBED = (
    "re-embedding to a new model rewrites every tenant's vectors, as the migrator "
    "(app/services/ops/reembed/, `elephant maintain reembed`)"
)

ALLOWED: tuple[Allowed, ...] = (
    Allowed(
        "sql/access/list_analysts.sql",
        "LEFT JOIN analyst_grants AS g ON g.role_name = a.role_name",
        "lists analysts with every tenant each reads (the grants are keyed by role), as the "
        "migrator; the tenant filter is on the aggregated grants (HAVING)",
    ),
    Allowed(
        "sql/db/bm25_probe_page.sql", "SELECT id::text, text FROM {table} WHERE ctid >=", _PROBE
    ),
    Allowed("sql/db/bm25_probe_df.sql", "FROM {table} WHERE tsv @@ plainto_tsquery", _PROBE),
    Allowed("app/db/keyword_index.py", "SELECT EXISTS (SELECT 1 FROM {})", _PROBE),
    Allowed("sql/db/bm25_probe_lookup.sql", "FROM {table} ORDER BY text <@> to_bm25query", _PROBE),
    Allowed(
        "sql/db/tenant_sizes.sql",
        "SELECT tenant_id, count(*), sum(count(*)) OVER () FROM {table}",
        "sizes every tenant at once (GROUP BY tenant_id) to choose which get an index of "
        "their own: an operator statement across tenants",
    ),
    Allowed(
        "sql/db/tenant_ways.sql",
        "SELECT tenant_id, way, vector_rows, build_seconds, counted_at FROM tenant_vector_ways",
        "doctor lists every tenant's vector way, as the migrator",
    ),
    Allowed(
        "sql/ops/doctor_rows.sql",
        "(SELECT count(*) FROM jobs WHERE status = 'failed')",
        "doctor reports the whole database's queue and backlog, as the migrator",
    ),
    Allowed(
        "sql/ops/doctor_access.sql",
        "(SELECT count(*) FROM api_keys WHERE revoked_at IS NULL",
        "doctor counts every live key and every tenant graph without RLS, as the migrator",
    ),
    Allowed(
        "sql/ops/queue_depth.sql",
        "SELECT kind, status, count(*) FROM jobs WHERE status IN",
        "the Prometheus queue gauge sums the queue of every tenant (jobs stays on the "
        "coordinator on Citus)",
    ),
    Allowed(
        "app/services/ops/backup/make.py",
        "SELECT count(*) FROM {}",
        "the backup's manifest counts every table of the database (every tenant, the AGE "
        "catalog), as the migrator, in the dump's snapshot: an operator statement",
    ),
    Allowed("app/services/access/erasure/tenant.py", "SELECT count(*) FROM {}", _AGE),
    Allowed("app/services/graph/age.py", "SELECT count(*) FROM {}", _AGE),
    Allowed("sql/graph/age_counts.sql", "(r.properties::text::jsonb ->> 'valid_to')", _AGE),
    Allowed("sql/graph/age_entities.sql", "SELECT e.properties::text FROM {entity} AS e", _AGE),
    Allowed("sql/graph/age_named.sql", "SELECT v.p ->> 'key' FROM (SELECT", _AGE),
    Allowed("sql/graph/age_count_relations.sql", "WITH doomed AS MATERIALIZED (SELECT e.id", _AGE),
    Allowed(
        "sql/graph/age_entities_with_relations.sql",
        "WITH seeds AS MATERIALIZED ( SELECT e.id",
        _AGE,
    ),
    Allowed(
        "app/services/ops/reembed/state.py",
        "SELECT count(*), count(embedding_next) FROM {}",
        _REEMBED,
    ),
    Allowed("sql/reembed/write.sql", "UPDATE {table} AS {alias} SET {column} = %s", _REEMBED),
    Allowed("app/services/ops/reembed/phases.py", "WHERE age(xmin) <= age(%s::xid)", _REEMBED),
    Allowed(
        "sql/reembed/rows_memories.sql", "SELECT m.id::text, {version} FROM memories", _REEMBED
    ),
    Allowed("sql/reembed/rows_facts.sql", "SELECT f.id::text, {version} FROM facts", _REEMBED),
    Allowed("sql/reembed/rows_passages.sql", "FROM passages AS p LEFT JOIN turns AS t", _REEMBED),
    Allowed(
        "app/services/transfer/importer.py",
        "(SELECT m.new FROM {map} AS m WHERE m.old",
        "{map} is the import's temporary old-to-new row-number map, not a tenant table",
    ),
)


# ------------------------------------------------------------------ the scanner


def _collapse(text: str) -> str:
    return " ".join(text.split())


def tenant_references(text: str) -> set[str]:
    """The tenant relations ``text`` reads or writes; ``{}`` for a name composed in later."""
    found: set[str] = set()
    for match in _REFERENCE.finditer(text):
        if match["slot"] is not None:
            found.add(match["slot"])
        elif match["name"].lower() in TENANT_RELATIONS:
            found.add(match["name"].lower())
    return found


def is_tenant_statement(text: str) -> bool:
    """SQL (an upper-case verb) that reads or writes a tenant relation, or a relation
    whose name is composed in, which may be one."""
    return bool(_SQL_VERB.search(text)) and bool(tenant_references(text))


class _Texts(ast.NodeVisitor):
    """The string expressions of a module, each whole: an implicit or ``+``
    concatenation, an f-string and a ``.format(...)`` call (psycopg's ``sql.SQL`` too)
    are one text; a name bound to a string at module level is read through
    (``"... WHERE " + FILTER``), and so is ``sql.Identifier(NAME)``; what cannot be read
    stays ``{...}``. Docstrings are left out."""

    def __init__(self, skip: set[int]) -> None:
        self.constants: dict[str, str] = {}
        self.skip = skip
        self.texts: list[tuple[int, str]] = []

    def text_of(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(self._part(value) for value in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_string_sum(node):
            return self._or_slot(node.left) + self._or_slot(node.right)
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return self._call(node, node.func)
        return None

    def _call(self, node: ast.Call, func: ast.Attribute) -> str | None:
        if func.attr in ("SQL", "Identifier") and node.args and not node.keywords:
            parts = [self.text_of(arg) for arg in node.args]
            if any(part is None for part in parts):
                return None
            return ".".join(part for part in parts if part is not None)
        if func.attr == "format":
            base = self.text_of(func.value)
            if base is None:
                return None
            named = {k.arg: self.text_of(k.value) for k in node.keywords if k.arg is not None}
            places = iter(node.args)

            def fill(slot: re.Match[str]) -> str:
                name = slot[1]
                if not name:
                    arg = next(places, None)
                    value = None if arg is None else self.text_of(arg)
                else:
                    value = named.get(name)
                return value if value is not None else slot[0]

            return re.sub(r"(?<!\{)\{(\w*)\}(?!\})", fill, base)
        return None

    def _part(self, value: ast.expr) -> str:
        if isinstance(value, ast.FormattedValue):
            return self._or_slot(value.value)
        text = self.text_of(value)
        return "" if text is None else text

    def _or_slot(self, node: ast.expr) -> str:
        text = self.text_of(node)
        return text if text is not None else "{" + ast.unparse(node) + "}"

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._take(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._take(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self._take(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            self._take(node)
        else:
            self.generic_visit(node)

    def _take(self, node: ast.expr) -> None:
        if id(node) in self.skip:
            return
        text = self.text_of(node)
        if text is None:
            self.generic_visit(node)
        else:
            self.texts.append((node.lineno, text))


def _is_string_sum(node: ast.BinOp) -> bool:
    """``a + b`` where one side is a string literal (not ``1 + 2``, not ``x + y``)."""
    for side in (node.left, node.right):
        if isinstance(side, ast.Constant) and isinstance(side.value, str):
            return True
        if isinstance(side, ast.JoinedStr):
            return True
        if isinstance(side, ast.BinOp) and _is_string_sum(side):
            return True
    return False


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def python_statements(source: str, file: str) -> Iterator[Statement]:
    """The tenant statements in one Python module's source."""
    tree = ast.parse(source)
    texts = _Texts(_docstrings(tree))
    for node in tree.body:  # module-level NAME = "text", in order
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        text = texts.text_of(value)
        if isinstance(target, ast.Name) and text is not None:
            texts.constants[target.id] = text
    texts.visit(tree)
    for line, text in texts.texts:
        if is_tenant_statement(text):
            yield Statement(file, line, _collapse(text))


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*", "", text)


def _fill_slots(text: str, folder: Path) -> str:
    """Slots filled as the code fills them (app/db/resources.py: from the file's own
    folder); a slot with no file of its own name (hybrid_search.sql's ``{keyword_lane}``)
    is left, being checked in the files it takes."""

    def one(slot: re.Match[str]) -> str:
        path = folder / f"{slot['name']}.sql"
        if not path.exists():
            return slot[0]
        return _fill_slots(fragment(str(path.relative_to(SQL_DIR))), folder)

    return _SLOT.sub(one, text)


def sql_file_statements(text: str, file: str) -> Iterator[Statement]:
    """The tenant statements of one SQL file, split at semicolons, slots filled."""
    text = _strip_comments(text)  # keeps the line breaks, so the line numbers hold
    offset = 0
    for chunk in text.split(";"):
        line = text.count("\n", 0, offset + len(chunk) - len(chunk.lstrip())) + 1
        offset += len(chunk) + 1
        body = _strip_comments(_fill_slots(chunk, (ROOT / file).parent))
        if is_tenant_statement(body):
            yield Statement(file, line, _collapse(body))


@cache
def all_statements() -> tuple[Statement, ...]:
    """Every tenant statement of app/ and sql/ (read once per test run)."""
    found: list[Statement] = []
    for path in sorted(APP.rglob("*.py")):
        found += python_statements(path.read_text(), str(path.relative_to(ROOT)))
    for path in sorted(SQL_DIR.rglob("*.sql")):
        if path.parent.name == OBJECTS_DIR:  # re-applied objects: out of scope (above)
            continue
        found += sql_file_statements(path.read_text(), str(path.relative_to(ROOT)))
    return tuple(found)


def untied_references(text: str) -> list[str]:
    """The references to tenant relations that the statement does not tie to a tenant.

    Each reference on its own: ``memories AS m`` needs ``m.tenant_id`` as a filter or a
    join (``m.tenant_id = ...``, ``= m.tenant_id``, ``m.tenant_id IN``), one without an
    alias a bare or qualified ``tenant_id`` filter, an ``INSERT INTO`` / ``COPY`` target
    ``tenant_id`` in its column list; a name composed in at run time any tenant_id
    filter. So one filtered lane does not cover another (``... UNION SELECT ... FROM
    facts``), and a tenant_id that is only selected or returned ties nothing."""
    untied = []
    for match in _REFERENCE.finditer(text):
        name = (match["name"] or "").lower()
        if match["slot"] is None and name not in TENANT_RELATIONS:
            continue
        alias = match["alias"]
        if alias is not None and alias.lower() in _NOT_ALIAS:
            alias = None
        verb = match["verb"].upper()
        if verb in ("INTO", "COPY") and _TENANT_COLUMN.match(text, match.start()):
            continue
        if match["slot"] is not None:
            tied = bool(_TENANT_FILTER.search(text))
        else:
            qualifiers = [re.escape(q) for q in (alias, name) if q is not None]
            qualified = rf"\b(?:{'|'.join(qualifiers)})\.tenant_id\b"
            tied = bool(
                re.search(rf"{qualified}\s*(?:=|\bIN\b)|(?:=|\bIN\b)\s*{qualified}", text, re.I)
            )
            if not tied and alias is None:
                tied = bool(re.search(r"(?<![.\w])tenant_id\s*(?:=|\bIN\b)", text, re.I))
        if not tied:
            untied.append(" ".join(filter(None, (verb, match["name"] or match["slot"], alias))))
    return untied


def names_tenant(text: str) -> bool:
    """Whether every tenant relation of a statement is tied to its tenant."""
    return not untied_references(text)


def unnamed(statements: Sequence[Statement]) -> list[Statement]:
    """The statements that do not name their tenant."""
    return [s for s in statements if not names_tenant(s.text)]


_CONFLICT = re.compile(r"\bON\s+CONFLICT\s*\((?P<columns>[^)]*)\)", re.IGNORECASE)
_INSERTED = re.compile(r"\bINSERT\s+INTO\s+(?P<table>\w+)", re.IGNORECASE)


def loose_conflict_targets(statements: Sequence[Statement]) -> list[Statement]:
    """Upserts into a tenant relation whose ``ON CONFLICT (...)`` target lacks tenant_id:
    on Citus every unique index of a distributed table holds it, so such a target names
    no index there (``ON CONFLICT DO NOTHING`` without a target is fine)."""
    found = []
    for statement in statements:
        inserted = _INSERTED.search(statement.text)
        if inserted is None or inserted["table"].lower() not in TENANT_RELATIONS:
            continue
        for target in _CONFLICT.finditer(statement.text):
            if "tenant_id" not in target["columns"].replace(" ", "").lower().split(","):
                found.append(statement)
    return found


def allowed_by(entry: Allowed, statement: Statement) -> bool:
    return statement.file == entry.file and _collapse(entry.fragment) in statement.text


# ------------------------------------------------------------------ the tests


def test_every_tenant_statement_names_tenant_id() -> None:
    missing = [s for s in unnamed(all_statements()) if not any(allowed_by(a, s) for a in ALLOWED)]
    assert not missing, (
        f"{len(missing)} tenant statement(s) without tenant_id (add "
        "`AND x.tenant_id = %(tenant)s`, join on `y.tenant_id = x.tenant_id`, or an ALLOWED "
        "entry with its reason):\n"
        + "\n".join(f"{s}\n    untied: {'; '.join(untied_references(s.text))}" for s in missing)
    )


def test_every_upsert_target_names_tenant_id() -> None:
    loose = loose_conflict_targets(all_statements())
    assert not loose, "ON CONFLICT targets without tenant_id:\n" + "\n".join(map(str, loose))


def test_every_allowed_entry_still_matches() -> None:
    """An entry whose statement now names tenant_id, moved or went is stale: remove it."""
    flagged = unnamed(all_statements())
    wrong = []
    for entry in ALLOWED:
        matched = [s for s in flagged if allowed_by(entry, s)]
        if len(matched) != entry.count:
            wrong.append(
                f"{entry.file}: {entry.fragment!r} matches {len(matched)}, not {entry.count}"
            )
    assert not wrong, "stale or loose ALLOWED entries:\n" + "\n".join(wrong)


def test_the_allowed_entries_are_narrow() -> None:
    for entry in ALLOWED:
        assert len(_collapse(entry.fragment)) >= 20, f"too short to be narrow: {entry}"
        assert entry.reason.strip(), f"no reason: {entry}"
        assert (ROOT / entry.file).is_file(), f"no such file: {entry}"


def test_the_tenant_relations_are_the_schema_s(db: Database) -> None:
    """TENANT_RELATIONS is every table and view with a tenant_id column, and nothing else."""
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_catalog.pg_attribute AS a "
            "JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid "
            "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm') "
            "AND a.attname = 'tenant_id' AND NOT a.attisdropped"
        ).fetchall()
    assert {str(row[0]) for row in rows} == TENANT_RELATIONS


# ------------------------------------------------------------------ the scanner can fail

_BAD_MODULE = '''
FILTER = "AND m.tenant_id = %(tenant)s"
GOOD = "SELECT id FROM memories AS m WHERE m.kind = 'note' " + FILTER

def split(conn, ids):
    """Reads FROM memories (a docstring, not a statement)."""
    conn.execute(
        "SELECT m.id, m.text "
        "FROM memories AS m "
        "WHERE m.id = ANY(%s)",
        (ids,),
    )

def summed(conn, table):
    conn.execute("UPDATE facts SET importance = 0 " + "WHERE id = %s", (1,))
    conn.execute(f"DELETE FROM turns WHERE conversation_id = {table!r}")
    conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
    conn.execute("SELECT id, tenant_id FROM jobs WHERE id = %s", (1,))
    conn.execute(
        "SELECT m.id FROM memories AS m WHERE m.tenant_id = %s "
        "UNION SELECT f.id FROM facts AS f WHERE f.kind = 'x'"
    )

def good(conn, tenant):
    conn.execute("INSERT INTO feedback (tenant_id, memory_id) VALUES (%s, %s)", (tenant, 1))
    conn.execute(f"SELECT id FROM facts AS f WHERE f.tenant_id = %s {FILTER}", (tenant,))
    conn.execute("SELECT 1 FROM memories AS m JOIN turns AS t ON t.tenant_id = m.tenant_id")
    conn.execute(
        "INSERT INTO access_stats (tenant_id, item_id) SELECT tenant_id, id FROM facts"
    )
    log.info("read from memories, no SQL verb: not a statement")
'''


def test_the_scanner_finds_a_statement_without_tenant_id() -> None:
    flagged = unnamed(list(python_statements(_BAD_MODULE, "bad.py")))
    lines = sorted(s.line for s in flagged)
    assert lines == [8, 15, 16, 17, 18, 20, 29], "\n".join(map(str, flagged))
    split = next(s for s in flagged if s.line == 8)
    assert split.text == "SELECT m.id, m.text FROM memories AS m WHERE m.id = ANY(%s)"


def test_the_scanner_finds_an_upsert_target_without_tenant_id() -> None:
    source = (
        'A = "INSERT INTO passages (tenant_id, turn_id, ordinal) VALUES (%s, %s, %s) "'
        ' "ON CONFLICT (turn_id, ordinal) DO NOTHING"\n'
        'B = "INSERT INTO passages (tenant_id, turn_id, ordinal) VALUES (%s, %s, %s) "'
        ' "ON CONFLICT DO NOTHING"\n'
        'C = "INSERT INTO access_stats (tenant_id, item_id) VALUES (%s, %s) "'
        ' "ON CONFLICT (tenant_id, item_id) DO NOTHING"\n'
    )
    loose = loose_conflict_targets(list(python_statements(source, "bad.py")))
    assert [s.line for s in loose] == [1]


def test_the_scanner_reads_sql_files() -> None:
    text = (
        "-- a header; FROM memories in a comment is no statement\n"
        "SELECT 1 FROM admission_log WHERE decision = 'rejected';\n"
        "\n"
        "SELECT 1 FROM admission_log WHERE tenant_id = %(tenant)s;\n"
    )
    flagged = unnamed(list(sql_file_statements(text, "bad.sql")))
    assert [(s.line, s.text) for s in flagged] == [
        (2, "SELECT 1 FROM admission_log WHERE decision = 'rejected'")
    ]


def test_an_allowed_entry_is_narrow_by_file_and_fragment() -> None:
    entry = Allowed("a.py", "SELECT count(*) FROM {}", "example")
    assert allowed_by(entry, Statement("a.py", 1, "SELECT count(*) FROM {}"))
    assert not allowed_by(entry, Statement("b.py", 1, "SELECT count(*) FROM {}"))
    assert not allowed_by(entry, Statement("a.py", 1, "SELECT count(*) FROM memories"))
