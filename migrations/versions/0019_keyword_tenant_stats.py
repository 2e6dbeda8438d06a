"""Keyword statistics from the tenant's own rows; analysts cannot score against an index's.

A bm25 index keeps one set of statistics (document frequencies, average length) over
every tenant's rows, and pg_textsearch lets PUBLIC call its scoring functions: an
analyst of tenant A scored a literal, `'word' <@> to_bm25query('word',
'memories_text_bm25')`, and read from the score whether other tenants' memories hold
the word. The search now ranks by the tenant's own statistics
(sql/retrieval/keyword_bm25_tenant.sql); here:

- `elephant_keyword_frequencies(table, words)`: how many of the tenant's memories or
  facts hold each word (up to 10,000), through the GIN index on tsv. Owned by the
  keyword role of migration 0009 (the app role may not use that index under row-level
  security: `@@` is not leakproof), executable by the app and worker roles only; the
  tenant is elephant.tenant_id, as for the functions of 0009.

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
# What pg_textsearch itself keeps from PUBLIC (a downgrade leaves them so)
OWNER_ONLY = ("bm25_dump_index(text)", "bm25_summarize_index(text)")
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


TENANT_SETTING = "elephant.tenant_id"
FREQUENCIES = "elephant_keyword_frequencies(text, text[])"
# For each word (a lexeme of to_tsvector('english')), how many of the tenant's rows of
# the table hold it, up to 10,000 (the lane's document count is capped alike). One
# statement for all the words, its plan cached by plpgsql (a custom plan per word cost
# ~1 ms of planning against 0.1 ms of execution). A word becomes a one-lexeme tsquery
# quoted as the tsquery input syntax wants (' doubled, \ escaped).
FREQUENCIES_BODY = r"""
CREATE FUNCTION elephant_keyword_frequencies(p_table text, p_terms text[])
RETURNS bigint[]
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
DECLARE
    v_tenant text := current_setting('elephant.tenant_id', true);
BEGIN
    IF p_table = 'memories' THEN
        RETURN ARRAY(
            SELECT (SELECT count(*)
                      FROM (SELECT 1 FROM memories AS m
                             WHERE m.tenant_id = v_tenant
                               AND m.tsv @@ ('''' || replace(replace(w.term, '\', '\\'),
                                             '''', '''''') || '''')::tsquery
                             LIMIT 10000) AS c)
              FROM unnest(p_terms) WITH ORDINALITY AS w(term, n)
             ORDER BY w.n);
    ELSIF p_table = 'facts' THEN
        RETURN ARRAY(
            SELECT (SELECT count(*)
                      FROM (SELECT 1 FROM facts AS f
                             WHERE f.tenant_id = v_tenant
                               AND f.tsv @@ ('''' || replace(replace(w.term, '\', '\\'),
                                             '''', '''''') || '''')::tsquery
                             LIMIT 10000) AS c)
              FROM unnest(p_terms) WITH ORDINALITY AS w(term, n)
             ORDER BY w.n);
    END IF;
    RAISE EXCEPTION 'elephant_keyword_frequencies: no table %', p_table;
END
$$
"""


def keyword_role(app_role: str) -> str:
    """`<app role>_keyword` (migration 0009), within Postgres' 63 characters."""
    return f"{app_role[:55]}_keyword"


def _frequencies() -> None:
    """The function, owned by the keyword role (migration 0009: SELECT on tenant_id and
    tsv, and a policy that applies no tenant before `@@`, so the GIN index serves it)."""
    name = keyword_role(str(context.config.attributes["app_role"]))
    role = _quote(name)
    op.execute(FREQUENCIES_BODY)
    lend = (
        not op.get_bind()
        .execute(sa.text("SELECT has_schema_privilege(:r, 'public', 'CREATE')"), {"r": name})
        .scalar()
    )
    if lend:
        op.execute(f"GRANT CREATE ON SCHEMA public TO {role}")
    op.execute(f"ALTER FUNCTION {FREQUENCIES} OWNER TO {role}")
    if lend:
        op.execute(f"REVOKE CREATE ON SCHEMA public FROM {role}")
    op.execute(f"REVOKE ALL ON FUNCTION {FREQUENCIES} FROM PUBLIC")
    op.execute(f"GRANT EXECUTE ON FUNCTION {FREQUENCIES} TO {_roles()}")
    op.execute(
        f"COMMENT ON FUNCTION {FREQUENCIES} IS 'For each word (an english lexeme), how many "
        f"rows of the table (memories or facts) of the tenant in {TENANT_SETTING} hold it, up "
        "to 10,000: the BM25 lane''s document frequencies from the tenant''s own rows "
        "(sql/retrieval/keyword_bm25_tenant.sql, migration 0019).'"
    )


def upgrade() -> None:
    _frequencies()
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
    op.execute(f"DROP FUNCTION IF EXISTS {FREQUENCIES}")
    functions = _functions()
    roles = _roles()
    for function in SEARCH_FUNCTIONS:
        if function.replace(", ", ",") in functions:
            op.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM {roles}")
    for function in functions:
        if function not in OWNER_ONLY:
            op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO PUBLIC")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0018_analyst_limits', updated_at = now()"
    )
