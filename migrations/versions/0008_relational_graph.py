"""Relational graph backend: entities and relations as ordinary tables.

For Postgres services without Apache AGE (and for Citus, which AGE does not
distribute): `kg_entities` (one row per entity key per tenant) and
`kg_relations` (typed, time-bounded edges between two entity keys of the same
tenant). The application uses them when `graph.backend` is `relational`, or
`auto` on a server without AGE (app/services/graph/relational.py).

- Keys are compared byte-wise (`COLLATE "C"`): the key index serves lookups,
  name-ordered pages and both walk directions; substring search scans the
  tenant's keys (index-only), so no extension (pg_trgm) is needed.
- One current relation per (source, type, target): a partial unique index on
  the rows whose `valid_to` is null; closed relations are kept as history.
- The relation types are frozen here in the migration's own text (a CHECK); a
  new type in app/services/graph/vocabulary.py needs a migration that widens it
  (tests/integration/test_graph_relational.py compares the two lists).
- Row-level security as on every tenant table; deleting a tenant deletes its
  entities and relations (ON DELETE CASCADE), deleting an entity its relations.

Revision ID: 0008_relational_graph
Revises: 0007_retrieval
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import context, op

revision = "0008_relational_graph"
down_revision = "0007_retrieval"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
# The relation vocabulary at this revision (app/services/graph/vocabulary.py RELATIONS).
RELATION_TYPES = (
    "supports", "contradicts", "evolved_into", "depends_on", "exemplifies", "part_of",
    "caused_by", "enables", "supersedes", "related_to", "investigates", "informs", "uses",
    "mentions", "knows", "works_at", "lives_in", "member_of",
)  # fmt: skip

COMMENTS = {
    "kg_entities": (
        "Knowledge-graph entities of the relational backend: one row per entity key and "
        "tenant (used when graph.backend is relational, or auto without Apache AGE)",
        {
            "tenant_id": "Owning tenant (row-level security)",
            "key": "Normalised name (case and runs of spaces folded): the entity's identity",
            "name": "Display name as first recorded",
            "role": "Entity type from the closed vocabulary (decision, person, artifact, ...)",
            "domain": "Subject domain (graph.domains)",
            "epistemic": "assertion, hypothesis, speculation or unknown",
            "source": "How it was created: record (an agent) or ingest (fact extraction)",
            "created_at": "When the entity was first written",
            "updated_at": "When its role, domain, status or validity last changed",
            "valid_from": "Start of validity",
            "valid_to": "End of validity (set when the entity was superseded); null: current",
        },
    ),
    "kg_relations": (
        "Knowledge-graph relations of the relational backend: a typed edge from one entity "
        "key to another of the same tenant, with its validity in time",
        {
            "id": "Surrogate id; also the order relations were recorded in",
            "tenant_id": "Owning tenant (row-level security)",
            "source_key": "Key of the entity the relation starts at (kg_entities.key)",
            "relation_type": "Relation type from the closed vocabulary (depends_on, uses, ...)",
            "target_key": "Key of the entity the relation points to (kg_entities.key)",
            "valid_from": "When the relation became true",
            "valid_to": "When it stopped being true; null: current (one current row per triple)",
            "recorded_at": "When it was written",
            "epistemic": "assertion, hypothesis, speculation or unknown",
            "source": "How it was created: record (an agent) or ingest (fact extraction)",
            "properties": "Any further edge properties (a JSON object; usually empty)",
        },
    ),
}


def _role() -> str:
    return '"' + str(context.config.attributes["app_role"]).replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def upgrade() -> None:
    types = ", ".join(_literal(name) for name in RELATION_TYPES)
    op.execute(
        """
        CREATE TABLE kg_entities (
            tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            key        text COLLATE "C" NOT NULL CHECK (key <> '' AND length(key) <= 1000),
            name       text NOT NULL,
            role       text NOT NULL,
            domain     text NOT NULL,
            epistemic  text NOT NULL,
            source     text NOT NULL DEFAULT 'record',
            created_at timestamptz,
            updated_at timestamptz,
            valid_from timestamptz,
            valid_to   timestamptz,
            PRIMARY KEY (tenant_id, key)
        )
        """
    )
    op.execute(
        f"""
        CREATE TABLE kg_relations (
            id            bigint GENERATED ALWAYS AS IDENTITY,
            tenant_id     text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            source_key    text COLLATE "C" NOT NULL,
            relation_type text NOT NULL CHECK (relation_type IN ({types})),
            target_key    text COLLATE "C" NOT NULL,
            valid_from    timestamptz,
            valid_to      timestamptz,
            recorded_at   timestamptz,
            epistemic     text,
            source        text,
            properties    jsonb NOT NULL DEFAULT '{{}}'::jsonb
                          CHECK (jsonb_typeof(properties) = 'object'),
            PRIMARY KEY (tenant_id, id),
            FOREIGN KEY (tenant_id, source_key) REFERENCES kg_entities (tenant_id, key)
                ON DELETE CASCADE,
            FOREIGN KEY (tenant_id, target_key) REFERENCES kg_entities (tenant_id, key)
                ON DELETE CASCADE
        )
        """
    )
    # Outgoing and incoming walks (and the cascades from kg_entities); the triple
    # lookups of invalidate/delete use the first.
    op.execute(
        "CREATE INDEX kg_relations_source ON kg_relations "
        "(tenant_id, source_key, relation_type, target_key)"
    )
    op.execute("CREATE INDEX kg_relations_target ON kg_relations (tenant_id, target_key)")
    op.execute(
        "CREATE UNIQUE INDEX kg_relations_current ON kg_relations "
        "(tenant_id, source_key, relation_type, target_key) WHERE valid_to IS NULL"
    )

    role = _role()
    setting = f"current_setting('{TENANT_SETTING}', true)"
    for table in ("kg_entities", "kg_relations"):
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {role}")
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
        )
    for table, (about, columns) in COMMENTS.items():
        op.execute(f"COMMENT ON TABLE {table} IS {_literal(about)}")
        for column, text in columns.items():
            op.execute(f"COMMENT ON COLUMN {table}.{column} IS {_literal(text)}")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0008_relational_graph', updated_at = now()"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS kg_relations")
    op.execute("DROP TABLE IF EXISTS kg_entities")
    op.execute("UPDATE elephant_meta SET schema_version = '0007_retrieval', updated_at = now()")
