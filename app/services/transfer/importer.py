"""Import an export file into an empty tenant: one transaction, all or nothing.

1. The whole file is read once and checked (``fileformat.scan``): a bad line, an unknown
   format version or table, a row of another tenant, a cut-off file, a row the API would
   refuse (``rules``: a note over commit.max_text_chars, a speaker too long, a number
   where text goes) is refused before anything is written.
2. In one transaction (``Database.provisioned_tenant``): the migrator creates the
   tenant's AGE graph when the file has a graph, then the transaction goes on as the app
   role inside the target tenant (row-level security), which creates the tenant row. The
   tenant must hold nothing yet; the rows are copied (COPY) into a temporary table
   and inserted table by table, parents first, by set-based ``INSERT ... SELECT`` from
   ``jsonb_populate_record``: columns as this database has them (one the file lacks
   takes its default; one this database lacks is an error naming it). Before any row is
   written, every reference in the file must name a row of the file (``references``):
   the tenant is empty, so anything else points at another tenant's row. A failure rolls
   all of it back, graph and tenant row included: nothing is left for the maintenance
   scheduler to find, and the same import can be run again. Rows of serving state
   (``catalog.SERVING``) in a file of an earlier release are skipped; the tenant's vector
   way is recorded afresh once the import has committed.
3. Ids: uuids (conversations, memories, facts) are kept, or with ``new_ids`` replaced
   everywhere they are referenced (foreign keys, ids without one, and uuid strings at
   the top level of JSON columns such as job payloads) by new ones in the same order
   (search breaks ties by id). Row numbers from database-wide sequences (turns,
   contradictions, jobs, ...) are always numbered afresh, and references to them (a
   passage's turn) follow through the table's natural key.
4. Derived state: tsvector and lower-case columns are generated, BM25 and HNSW indexes
   maintain themselves. Vectors are loaded when the file has them and was embedded by
   this database's model and dimension; otherwise memories and facts are embedded again
   (the texts their write paths embedded) and passages rebuilt.
5. The graph goes through the backend this process uses (AGE or relational).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import LiteralString

import psycopg
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from psycopg import sql

from app.config import validate_tenant_id
from app.db import tenant_indexes
from app.db.resources import fragment, load_sql, migrations_dir
from app.db.runtime import TENANT_SETTING, Connection, SQLParams
from app.errors import CapabilityMissing, Conflict, InvalidInput
from app.protocol import JSONObject
from app.services.access import audit
from app.services.graph import vocabulary
from app.services.graph.store import Entity, GraphStore, Relation
from app.services.graph.transfer import PAGE
from app.services.lifecycle.backfill import fill_passages
from app.services.memory.window_vectors import pooling, stored_vectors
from app.services.runtime import Elephant
from app.services.transfer import catalog, fileformat, references, rules
from app.services.transfer.catalog import Catalog, Column, Table
from app.services.transfer.export import VECTOR_COLUMN

log = logging.getLogger(__name__)

# The import's temporary tables, named so in sql/transfer/import_*.sql too: the file's
# row lines, and (with new_ids) old uuid (text) -> new uuid.
STAGE = "elephant_import_rows"
IDS = "elephant_import_ids"
EMBED_BATCH = 256
# What each write path embedded, so a vector made again is the vector it had: a window or
# note its text (app/services/memory/commit.py), an extracted fact its text
# (facts/pipeline.py), a graph observation "Entity: text" or "Entity (kind): text"
# (graph/operations.py), where the entity's name is the fact's subject.
EMBEDDED_TEXT: dict[str, LiteralString] = {
    "memories": "r.text",
    "facts": (
        "CASE WHEN r.observation_kind IS NULL THEN r.text "
        "WHEN r.observation_kind = 'note' THEN coalesce(r.subject, '') || ': ' || r.text "
        "ELSE coalesce(r.subject, '') || ' (' || r.observation_kind || '): ' || r.text END"
    ),
}
# The memories' text to embed when windows are pooled later: NULL for a window.
WINDOWS_POOLED_LATER: LiteralString = "CASE WHEN r.kind = 'window' THEN NULL ELSE r.text END"
VECTORS = "elephant_import_vectors"  # row (line number) -> its vector made here (temporary)
# Work in flight is queued again, unlocked: a running job's worker is in the other database.
OVERRIDES: dict[tuple[str, str], LiteralString] = {
    ("jobs", "status"): "CASE WHEN r.status = 'running' THEN 'queued' ELSE r.status END",
    ("jobs", "locked_by"): "CASE WHEN r.status = 'running' THEN NULL ELSE r.locked_by END",
    ("jobs", "locked_at"): "CASE WHEN r.status = 'running' THEN NULL ELSE r.locked_at END",
    ("jobs", "lease_expires_at"): (
        "CASE WHEN r.status = 'running' THEN NULL ELSE r.lease_expires_at END"
    ),
}
# uuids that name a row of another table without a foreign key (an access_stats row
# names a memory or a fact, a gate decision its conversation): with new_ids they follow
# that row to its new id.
REMAPPED_UUIDS: frozenset[tuple[str, str]] = references.UNKEYED_UUIDS
# Never copied from the file: the tenant's id is the target's, its row's age is its own.
TENANT_KEPT = frozenset({"id", "created_at"})


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import wrote; ``embedded``: rows whose vectors were made here (none when the
    file's vectors were used)."""

    tenant: str
    source_tenant: str
    rows: dict[str, int]
    graph_entities: int
    graph_relations: int
    new_ids: bool
    vectors: str  # "from the file" or why they were made again
    embedded: dict[str, int]
    seconds: float


def import_tenant(
    elephant: Elephant, path: Path, tenant: str | None = None, *, new_ids: bool = False
) -> ImportReport:
    """Import ``path`` into ``tenant`` (default: the tenant it was exported from)."""
    started = time.perf_counter()
    scanned = fileformat.scan(path, rules.RowRules(elephant))  # the doors' input rules
    header = scanned.header
    target = tenant or header.tenant
    try:
        validate_tenant_id(target)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    graph_rows = sum(scanned.counts.get(s, 0) for s in fileformat.GRAPH_SECTIONS)
    store = _store(elephant, graph_rows)

    def provision(conn: Connection) -> None:
        if store is not None and graph_rows:
            store.provision(conn, target)  # an AGE graph: in the transaction, by the migrator

    try:
        with elephant.db.provisioned_tenant(target, provision) as conn:
            report = _import(elephant, conn, path, scanned, target, new_ids, store)
    except psycopg.errors.UniqueViolation as exc:
        constraint = exc.diag.constraint_name or "a unique constraint"
        if constraint.endswith("_pkey"):
            raise Conflict(
                f"ids in the file are already used in this database ({constraint}): by the "
                "tenant it was exported from, or an earlier import of it; import with "
                "--new-ids (new_ids) to give the rows new ids. Nothing was imported"
            ) from None
        raise Conflict(
            f"the file's rows conflict with rows in this database ({constraint}): "
            f"{exc.diag.message_detail or exc.diag.message_primary}. Nothing was imported"
        ) from None
    except (psycopg.errors.DataError, psycopg.errors.IntegrityError) as exc:  # any 22/23xxx
        raise InvalidInput(
            f"the file's rows do not fit this database: {exc.diag.message_primary} "
            f"({exc.diag.table_name or 'a table'}); nothing was imported"
        ) from None
    _record_way(elephant, target)
    elapsed = round(time.perf_counter() - started, 3)
    return replace(report, seconds=elapsed)


def _record_way(elephant: Elephant, tenant: str) -> None:
    """How the server serves the imported tenant's vector lanes, recorded as the keeper
    records a tenant it has just counted (app/db/tenant_indexes.py): exact below
    search.tenant_index_rows, else the shared graphs until the keeper, in its next round,
    builds the tenant's own indexes (an import builds no index beside a live server)."""
    threshold = elephant.settings.search.tenant_index_rows
    try:
        with elephant.db.admin_connection() as conn, conn.transaction():
            # Row-level security may apply to the migrator (external mode, FORCE): scope it.
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
            found = conn.execute(
                load_sql("transfer/import_vector_rows.sql"), {"tenant": tenant}
            ).fetchone()
            tenant_indexes.record_counted(conn, tenant, int(found[0]) if found else 0, threshold)
    except psycopg.Error as exc:  # the rows are in: an unrecorded tenant is read exactly
        log.warning("imported tenant %s: its vector way was not recorded: %s", tenant, exc)
    elephant.vector_ways.forget(tenant)


def _statement(name: str) -> str:
    """``sql/transfer/import_<name>.sql`` less its header comment (which documents it)."""
    return fragment(f"transfer/import_{name}.sql")


def _store(elephant: Elephant, graph_rows: int) -> GraphStore | None:
    """The graph in use, or None when there is none; a file holding a graph needs one."""
    store = elephant.graph if elephant.graph_decision.backend is not None else None
    if store is None and graph_rows:
        raise CapabilityMissing(
            f"the file holds a knowledge graph ({graph_rows} entities and relations) but "
            f"this Elephant has none: {elephant.graph_decision.reason}"
        )
    return store


@dataclass
class _Plan:
    tenant: str
    tables: Catalog
    vectors: bool  # load the file's vectors
    new_ids: bool
    identity_maps: dict[str, str]  # table -> its temporary map of old to new row numbers


def _import(
    elephant: Elephant,
    conn: Connection,
    path: Path,
    scanned: fileformat.Scan,
    tenant: str,
    new_ids: bool,
    store: GraphStore | None,
) -> ImportReport:
    header = scanned.header
    # The lock every write of the tenant waits on (see erasure): nothing lands meanwhile.
    conn.execute("SELECT 1 FROM tenants WHERE id = %s FOR UPDATE", (tenant,))
    conn.execute("SELECT set_config('statement_timeout', '0', true)")
    tables = catalog.read(conn)
    info = elephant.db.schema_info(conn)
    _check_revision(header.schema_revision, info.revision)
    _check_sections(header, tables)
    _check_empty(conn, tables, tenant, store)
    same_model = (header.embedding_model, header.embedding_dim) == (
        info.embedding_model,
        info.embedding_dim,
    )
    if not header.vectors:
        vectors = "made again: the file has none (exported with --no-vectors)"
    elif not same_model:
        vectors = (
            f"made again: the file's are {header.embedding_model} ({header.embedding_dim}-d), "
            f"this database's {info.embedding_model} ({info.embedding_dim}-d)"
        )
    else:
        vectors = "from the file"
    plan = _Plan(tenant, tables, vectors == "from the file", new_ids, {})
    _stage(conn, path, scanned.lines)
    references.check(conn, tables, set(scanned.counts))
    _map_ids(conn, tables, new_ids)
    _tenant_settings(conn, tenant)
    rows = {}
    embedded: dict[str, int] = {}
    for table in tables.tables.values():
        if not scanned.counts.get(table.name) or (table.needs_vectors and not plan.vectors):
            continue
        if not plan.vectors and table.name in EMBEDDED_TEXT:
            embedded[table.name] = _embed(elephant, conn, table)
        rows[table.name] = _insert(conn, table, plan)
    entities, relations = (0, 0) if store is None else _graph(conn, store, tenant)
    if not plan.vectors:
        embedded["passages"] = _passages(elephant, conn, tenant)
        pooled = _pool_windows(elephant, conn, tenant)  # memories whose vector waited
        if pooled:
            embedded["memories"] = embedded.get("memories", 0) + pooled
    audit.write(
        conn,
        tenant=tenant,
        key_prefix=None,
        action="import",
        target=f"export of {header.tenant}",
        detail={
            "rows": rows,
            "graph": {"entities": entities, "relations": relations},
            "new_ids": new_ids,
            "vectors": vectors,
            "app_version": header.app_version,
            "exported_at": header.exported_at,
        },
    )
    return ImportReport(
        tenant=tenant,
        source_tenant=header.tenant,
        rows=rows,
        graph_entities=entities,
        graph_relations=relations,
        new_ids=new_ids,
        vectors=vectors,
        embedded=embedded,
        seconds=0.0,
    )


# ------------------------------------------------------------------ checks


def _check_revision(exported: str, here: str | None) -> None:
    """A file from this schema or an older one imports (columns added since take their
    defaults); from a schema this build does not know, it does not."""
    if exported == here:
        return
    try:
        known = ScriptDirectory(str(migrations_dir())).get_revision(exported)
    except CommandError:
        known = None
    if known is None:
        raise InvalidInput(
            f"the file was exported from schema revision {exported!r}, which this build does "
            f"not know (this database is at {here}): import it with a newer Elephant"
        )


def _check_sections(header: fileformat.Header, tables: Catalog) -> None:
    # serving state (the vector way, maintenance runs) in a file of an earlier release:
    # known, and skipped (the way is recorded afresh, _record_way)
    known = {fileformat.TENANT_SECTION, *fileformat.GRAPH_SECTIONS, *tables.tables}
    known |= catalog.SERVING
    unknown = [section for section in header.sections if section not in known]
    if unknown:
        raise InvalidInput(
            f"the file has rows of {', '.join(unknown)}, which this database does not import "
            f"(tenant tables here: {', '.join(tables.tables)})"
        )


def _check_empty(conn: Connection, tables: Catalog, tenant: str, store: GraphStore | None) -> None:
    holding = [
        name
        for name in tables.tables
        if conn.execute(
            sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE tenant_id = %s)").format(
                sql.Identifier(name)
            ),
            (tenant,),
        ).fetchone()
        == (True,)
    ]
    if store is not None and store.counts(conn, tenant).entities:
        holding.append("graph")
    if holding:
        raise Conflict(
            f"tenant {tenant!r} is not empty (it has rows in {', '.join(holding)}): import "
            "into a new tenant (--tenant), or erase this one first (elephant erase --all)"
        )


# ------------------------------------------------------------------ staging


def _stage(conn: Connection, path: Path, lines: int) -> None:
    """Every row line (not the header, line 1, nor the end line) into a temporary table."""
    conn.execute(_statement("stage_table"))
    with (
        fileformat.open_text(path, "r") as handle,
        conn.cursor() as cursor,
        cursor.copy(sql.SQL("COPY {} (n, line) FROM STDIN").format(sql.Identifier(STAGE))) as copy,
    ):
        for number, text in fileformat.numbered_lines(handle):
            if 1 < number < lines:
                copy.write_row((number, text))
    conn.execute(
        sql.SQL("CREATE INDEX ON {} ((line ->> 'table'), n)").format(sql.Identifier(STAGE))
    )
    conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(STAGE)))


def _staged(conn: Connection, section: str) -> Iterator[list[JSONObject]]:
    """The rows of a section, a page at a time, in file order."""
    after = 0
    while True:
        rows = conn.execute(_statement("staged"), (section, after, PAGE)).fetchall()
        if not rows:
            return
        after = int(rows[-1][0])
        yield [dict(row[1]) for row in rows]


def _keys(conn: Connection, section: str) -> set[str]:
    rows = conn.execute(_statement("keys"), (section,)).fetchall()
    return {str(row[0]) for row in rows}


def _map_ids(conn: Connection, tables: Catalog, new_ids: bool) -> None:
    """With new_ids: a new uuid for every uuid primary key in the file, in the order of
    the old ones (search breaks ties by id: the copy then ranks as the original). The map
    is made empty when ids are kept (the job payloads' expression reads it)."""
    conn.execute(_statement("ids_table"))
    if not new_ids:
        return
    for table in tables.tables.values():
        if table.uuid_key is not None:
            conn.execute(_statement("ids"), (table.uuid_key, table.name))
    conn.execute(_statement("ids_ordered"))


# ------------------------------------------------------------------ rows


def _tenant_settings(conn: Connection, tenant: str) -> None:
    """The tenant's name and settings (owner, gate threshold) from the file."""
    keys = _keys(conn, fileformat.TENANT_SECTION)
    columns = {str(row[0]) for row in conn.execute(_statement("tenant_columns")).fetchall()}
    _no_unknown(fileformat.TENANT_SECTION, keys, columns)
    carried = sorted(keys - TENANT_KEPT)
    if not carried:
        return
    conn.execute(
        sql.SQL(_statement("tenant_settings")).format(
            columns=sql.SQL(", ").join(map(sql.Identifier, carried)),
            values=sql.SQL(", ").join(sql.Identifier("r", name) for name in carried),
        ),
        {"section": fileformat.TENANT_SECTION, "tenant": tenant},
    )


def _no_unknown(section: str, keys: set[str], columns: set[str]) -> None:
    unknown = sorted(keys - columns - {"tenant_id"})
    if unknown:
        raise InvalidInput(
            f"rows of {section} in the file have {', '.join(unknown)}, which this database's "
            f"{section} does not have: upgrade this Elephant (elephant migrate) or use the "
            "version that exported it"
        )


def _insert(conn: Connection, table: Table, plan: _Plan) -> int:
    keys = _keys(conn, table.name)
    _no_unknown(table.name, keys, {c.name for c in table.columns})
    dropped = [c.name for c in table.columns if c.vector and not plan.vectors]
    remade = None if plan.vectors or table.name not in EMBEDDED_TEXT else VECTOR_COLUMN
    written = [  # tenant_id is named in the statement itself (Citus routes each row by it)
        c
        for c in table.columns
        if c.name != "tenant_id"
        and (
            c.name == remade
            or (not c.generated and not c.identity and c.name in keys and c.name not in dropped)
        )
    ]
    rows = sql.SQL(_statement("rows")).format(table=sql.Identifier(table.name))
    params = {"tenant": plan.tenant, "section": table.name, "dropped": dropped}
    count = conn.execute(
        sql.SQL(_statement("insert")).format(
            table=sql.Identifier(table.name),
            columns=sql.SQL(", ").join(sql.Identifier(c.name) for c in written),
            values=sql.SQL(", ").join(_value(table, c, plan) for c in written),
            rows=rows,
        ),
        params,
    ).rowcount
    identity = _referenced(table, plan.tables)
    if identity is not None:
        _map_rows(conn, table, identity, plan, keys, rows, params)
    return count


def _value(table: Table, column: Column, plan: _Plan) -> sql.Composable:
    """The SQL giving a column's value from the file's row ``r``."""
    if column.name == "tenant_id":
        return sql.Placeholder("tenant")
    if column.vector and not plan.vectors:  # made by _embed
        return sql.SQL("(SELECT v.embedding FROM {vectors} AS v WHERE v.n = s.n)").format(
            vectors=sql.Identifier(VECTORS)
        )
    override = OVERRIDES.get((table.name, column.name))
    if override is not None:
        return sql.SQL(override)
    if (table.name, column.name) in references.PAYLOADS:  # ids as the job's rows get them
        return sql.SQL(_statement("job_ids")).format(value=sql.Identifier("r", column.name))
    value = sql.Identifier("r", column.name)
    reference = next((ref for ref in table.references if ref.column == column.name), None)
    if reference is not None and reference.table in plan.identity_maps:
        return sql.SQL("(SELECT m.new FROM {map} AS m WHERE m.old = {value})").format(
            map=sql.Identifier(plan.identity_maps[reference.table]), value=value
        )
    if not plan.new_ids:
        return value
    parent = None if reference is None else plan.tables.tables.get(reference.table)
    if (
        (table.name, column.name) in REMAPPED_UUIDS
        or column.name == table.uuid_key
        or (parent is not None and reference is not None and parent.uuid_key == reference.target)
    ):
        return sql.SQL("(SELECT m.new FROM {ids} AS m WHERE m.old = {value}::text)").format(
            ids=sql.Identifier(IDS), value=value
        )
    if column.type == "jsonb":
        # uuid strings at the top level of an object (a job's memory_id, conversation_id)
        return sql.SQL(_statement("remap_uuids")).format(value=value)
    return value


def _referenced(table: Table, tables: Catalog) -> Column | None:
    """The row-number column another table points at (passages at turns), if any."""
    identity = table.identity
    if identity is not None and any(
        ref.table == table.name and ref.target == identity.name
        for other in tables.tables.values()
        for ref in other.references
    ):
        return identity
    return None


def _map_rows(
    conn: Connection,
    table: Table,
    identity: Column,
    plan: _Plan,
    keys: set[str],
    rows: sql.Composable,
    params: SQLParams,
) -> None:
    """Old row number -> new, joined on a unique key of the table without the number
    (turns: conversation and seq)."""
    natural = next(
        (
            columns
            for columns in table.unique
            if identity.name not in columns and set(columns) <= keys | {"tenant_id"}
        ),
        None,
    )
    if natural is None:
        raise InvalidInput(
            f"cannot import {table.name}: other tables point at its row numbers and it has "
            "no other unique key to find the new ones by"
        )
    name = f"elephant_import_map_{table.name}"
    conn.execute(sql.SQL(_statement("map_table")).format(map=sql.Identifier(name)))
    matches = sql.SQL(" AND ").join(
        sql.SQL("t.{column} = {value}").format(
            column=sql.Identifier(column),
            value=_value(table, next(c for c in table.columns if c.name == column), plan),
        )
        for column in natural
    )
    conn.execute(
        sql.SQL(_statement("map_rows")).format(
            map=sql.Identifier(name),
            id=sql.Identifier(identity.name),
            rows=rows,
            table=sql.Identifier(table.name),
            matches=matches,
        ),
        params,
    )
    plan.identity_maps[table.name] = name


# ------------------------------------------------------------------ graph


def _graph(conn: Connection, store: GraphStore, tenant: str) -> tuple[int, int]:
    entities = relations = 0
    for page in _staged(conn, fileformat.GRAPH_ENTITIES):
        store.create_entities(conn, tenant, [_entity(row) for row in page])
        entities += len(page)
    for page in _staged(conn, fileformat.GRAPH_RELATIONS):
        store.create_relations(conn, tenant, [_relation(row) for row in page])
        relations += len(page)
    return entities, relations


_ENTITY_FIELDS = frozenset(f.name for f in fields(Entity))


def _entity(row: JSONObject) -> Entity:
    unknown = set(row) - _ENTITY_FIELDS
    missing = {"key", "name", "role", "domain", "epistemic"} - set(row)
    if unknown or missing:
        problems = [f"unknown field {name}" for name in sorted(unknown)]
        problems += [f"no {name}" for name in sorted(missing)]
        raise InvalidInput(f"a graph entity row has {', '.join(problems)}: {row}")
    if not all(value is None or isinstance(value, str) for value in row.values()):
        raise InvalidInput(f"a graph entity row has a value that is not text: {row}")
    entity = Entity(**row)
    vocabulary.role(entity.role)
    vocabulary.epistemic(entity.epistemic)
    return entity


def _relation(row: JSONObject) -> Relation:
    if set(row) != {"source", "relation_type", "target", "properties"}:
        raise InvalidInput(
            "a graph relation row has exactly source, relation_type, target and properties, "
            f"not {', '.join(sorted(row))}"
        )
    if not all(isinstance(row[k], str) for k in ("source", "relation_type", "target")) or (
        not isinstance(row["properties"], dict)
    ):
        raise InvalidInput(f"a graph relation row has values of the wrong type: {row}")
    return Relation(
        row["source"], vocabulary.relation_type(row["relation_type"]), row["target"],
        dict(row["properties"]),
    )  # fmt: skip


# ------------------------------------------------------------------ vectors


def _embed(elephant: Elephant, conn: Connection, table: Table) -> int:
    """Vectors for a table's rows in the file, made before the rows are written (an
    update afterwards would write every row twice, and every index entry)."""
    conn.execute(_statement("vectors_table"))
    vectors = [c.name for c in table.columns if c.vector]
    text = EMBEDDED_TEXT[table.name]
    if table.name == "memories" and pooling(elephant.settings.embedding, elephant.embedder):
        # windows are pooled from their turns once the passages are made (_pool_windows);
        # until then they have no vector, so the model does not read them twice
        text = WINDOWS_POOLED_LATER
    done = after = 0
    while True:
        rows = conn.execute(
            sql.SQL(_statement("embedded_texts")).format(
                text=sql.SQL(text), table=sql.Identifier(table.name)
            ),
            (vectors, table.name, after, EMBED_BATCH),
        ).fetchall()
        if not rows:
            return done
        read = [(n, value) for n, value in rows if value is not None]
        made = elephant.embedder.embed_documents([str(value) for _, value in read])
        with conn.cursor() as cursor:
            cursor.executemany(
                sql.SQL("INSERT INTO {} (n, embedding) VALUES (%s, %s)").format(
                    sql.Identifier(VECTORS)
                ),
                [(n, vector) for (n, _), vector in zip(read, made, strict=True)],
            )
        done += len(read)
        after = int(rows[-1][0])


def _pool_windows(elephant: Elephant, conn: Connection, tenant: str) -> int:
    """Windows given the vector a commit gives them, pooled from their turns' passages
    (app/services/memory/window_vectors.py), once the passages are made (_embed left
    them without one)."""
    if not pooling(elephant.settings.embedding, elephant.embedder):
        return 0
    rows = conn.execute(load_sql("transfer/windows_of_tenant.sql"), {"tenant": tenant}).fetchall()
    for first in range(0, len(rows), EMBED_BATCH):
        batch = [(str(row_id), str(text)) for row_id, text in rows[first : first + EMBED_BATCH]]
        vectors = stored_vectors(conn, elephant.settings.embedding, elephant.embedder, batch)
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE memories SET embedding = %s WHERE tenant_id = %s AND id = %s",
                [
                    (vector, tenant, row_id)
                    for (row_id, _), vector in zip(batch, vectors, strict=True)
                ],
            )
    return len(rows)


def _passages(elephant: Elephant, conn: Connection, tenant: str) -> int:
    """Passages of every turn and long note, made here (the file's are only vectors)."""
    written = 0
    while True:
        filled = fill_passages(elephant, conn, tenant, EMBED_BATCH)
        written += filled.written
        if not filled.full or not filled.written:
            return written
