"""The schema documents itself: every table and view, and every column of them, has a
comment an analyst reads with ``\\d+`` or ``obj_description`` / ``col_description``.

The comments live in ``sql/objects/90_comments.sql`` (re-applied at every upgrade) or in
the migration that creates a table; this test names whatever has none.
"""

from __future__ import annotations

from app.db import Database

# Tables of the public schema that need no comment, each with its reason.
INTERNAL = {
    "alembic_version": "alembic's own bookkeeping; elephant_meta.schema_version says the same",
}

RELATIONS = """
SELECT c.relname, c.relkind::text, obj_description(c.oid, 'pg_class')
  FROM pg_class AS c
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND NOT EXISTS (SELECT 1 FROM pg_depend AS d
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                      AND d.deptype = 'e')
 ORDER BY c.relname
"""

COLUMNS = """
SELECT c.relname, a.attname, col_description(c.oid, a.attnum)
  FROM pg_class AS c
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
  JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = 'public' AND c.relname = ANY (%s)
 ORDER BY c.relname, a.attnum
"""


def documented(db: Database) -> tuple[dict[str, str | None], dict[tuple[str, str], str | None]]:
    with db.admin_connection() as conn:
        relations = conn.execute(RELATIONS).fetchall()
        tables = {name: comment for name, _, comment in relations if name not in INTERNAL}
        columns = conn.execute(COLUMNS, (list(tables),)).fetchall()
    return tables, {(table, column): comment for table, column, comment in columns}


def blank(comment: str | None) -> bool:
    return comment is None or not comment.strip()


def test_every_table_and_view_has_a_comment(db: Database) -> None:
    tables, _ = documented(db)
    assert {"memories", "facts", "graph_entities", "current_facts", "api_keys"} <= set(tables)
    missing = sorted(name for name, comment in tables.items() if blank(comment))
    assert missing == [], (
        f"tables/views without COMMENT ON (add to sql/objects/90_comments.sql): {missing}"
    )


def test_every_column_an_analyst_reads_has_a_comment(db: Database) -> None:
    _, columns = documented(db)
    assert ("memories", "embedding") in columns and ("graph_relations", "target") in columns
    missing = [f"{table}.{column}" for (table, column), c in columns.items() if blank(c)]
    assert missing == [], (
        f"{len(missing)} columns without COMMENT ON COLUMN "
        f"(add to sql/objects/90_comments.sql): {missing}"
    )


def test_internal_tables_exist(db: Database) -> None:
    """An exemption for a table that is gone would hide nothing but stale intent: drop it."""
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT relname FROM pg_class WHERE relname = ANY (%s) "
            "AND relnamespace = 'public'::regnamespace",
            (list(INTERNAL),),
        ).fetchall()
    assert {row[0] for row in rows} == set(INTERNAL)


def test_the_app_role_reads_the_comments_too(db: Database) -> None:
    """Analysts connected as the app role (``elephant sql --tenant``) see the same docs."""
    with db.tenant("comments") as conn:
        row = conn.execute(
            "SELECT obj_description('current_facts'::regclass, 'pg_class'), "
            "col_description('memories'::regclass, "
            "(SELECT attnum FROM pg_attribute WHERE attrelid = 'memories'::regclass "
            "AND attname = 'importance'))"
        ).fetchone()
    assert row is not None
    assert row[0] is not None and row[0].startswith("Facts true now")
    assert row[1] is not None and "0..100" in row[1]
