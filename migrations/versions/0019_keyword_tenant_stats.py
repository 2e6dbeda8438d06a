"""Analysts cannot score text against a bm25 index's statistics (issue 40, item 5).

A bm25 index keeps one set of statistics (document frequencies, average length) over
every tenant's rows, and pg_textsearch lets PUBLIC call its scoring functions: an
analyst of tenant A scored a literal, `'word' <@> to_bm25query('word',
'memories_text_bm25')`, and read from the score whether other tenants' memories hold
the word. The search itself now ranks by the tenant's own statistics
(sql/retrieval/keyword_bm25_tenant.sql, no migration needed); here:

- EXECUTE on pg_textsearch's functions is taken from PUBLIC, except the type
  input/output functions (which run without a privilege check anyway), and the
  scoring functions the search uses (to_bm25query, the `<@>` operators' functions,
  the equality functions) are granted to the roles Elephant runs as (the app and
  worker roles). The maintenance functions (bm25_spill_index, bm25_force_merge,
  bm25_dump_index, bm25_summarize_index) stay the owner's.
- Only the functions' owner may change their grants (the extension's creator, a
  superuser on the embedded server): a migrator that is not one, or a database without
  pg_textsearch, skips this (docs/security.md says what then holds). An extension
  created after this migration keeps PUBLIC's grants: run `elephant migrate` down and up
  again, or the REVOKE below by hand.

Revision ID: 0019_keyword_tenant_stats
Revises: 0018_analyst_limits
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0019_keyword_tenant_stats"
down_revision = "0018_analyst_limits"
branch_labels = None
depends_on = None

SEARCH_FUNCTIONS = (
    "to_bm25query(text)",
    "to_bm25query(text, text)",
    "bm25_text_bm25query_score(text, bm25query)",
    "bm25_text_text_score(text, text)",
    "bm25_get_current_score()",
    "bm25query_eq(bm25query, bm25query)",
    "bm25vector_eq(bm25vector, bm25vector)",
)
# pg_textsearch's functions but the type input/output ones, as regprocedure text
EXTENSION_FUNCTIONS = """
SELECT p.oid::regprocedure::text
FROM pg_depend AS d
JOIN pg_proc AS p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
JOIN pg_extension AS e ON d.refclassid = 'pg_extension'::regclass AND e.oid = d.refobjid
WHERE e.extname = 'pg_textsearch' AND d.deptype = 'e'
  AND p.proname !~ '_(in|out|recv|send)$'
  AND pg_has_role(p.proowner, 'USAGE')
ORDER BY 1
"""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _roles() -> str:
    """The roles Elephant runs as: the app role and the worker role."""
    attributes = context.config.attributes
    app = str(attributes["app_role"])
    worker = str(attributes.get("worker_role", "elephant_worker"))
    return ", ".join(_quote(role) for role in (app, worker))


def _functions() -> list[str]:
    """The extension's functions the migrator may grant (none without pg_textsearch)."""
    rows = op.get_bind().execute(sa.text(EXTENSION_FUNCTIONS)).all()
    return [str(row[0]) for row in rows]


def upgrade() -> None:
    functions = _functions()
    roles = _roles()
    for function in functions:
        op.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM PUBLIC")
    for function in SEARCH_FUNCTIONS:
        if function.replace(", ", ",") in functions:
            op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {roles}")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0019_keyword_tenant_stats', updated_at = now()"
    )


def downgrade() -> None:
    functions = _functions()
    roles = _roles()
    for function in SEARCH_FUNCTIONS:
        if function.replace(", ", ",") in functions:
            op.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM {roles}")
    for function in functions:
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO PUBLIC")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0018_analyst_limits', updated_at = now()"
    )
