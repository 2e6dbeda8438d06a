"""Entity links of memories: which people, places, organisations, products and dates a
window or note names, so search can follow an entity from a hit to the memories that
share it (issue 41).

- `memory_entities`: one row per memory and entity it names (typed: person, place,
  organization, product, date, event, work, thing), with how often it names it. Written
  when a memory's facts are extracted (app/services/graph/mentions.py), with the offline
  entity recogniser whichever extractor made the facts. A passage is part of a turn or a
  note: it reaches its entities through the memories (windows, the note) that hold it.
  Looked up by (tenant_id, entity_key) (the memories naming an entity) and by
  (tenant_id, memory_id) (the entities a memory names, the primary key).
- `entity_mentions`: a view counting, per tenant and entity, the memories and facts
  linked to it (memory_entities, fact_entities) and its most frequent type. A hub is
  an entity more rows name than a threshold (search.hub_mentions); a condition on
  tenant_id and entity_key reaches the tables' indexes, so counting a few entities is
  cheap.
- A `link_entities` job is queued for every tenant that holds memories: it links the
  memories stored before this migration (the backfill), in batches.

Revision ID: 0020_memory_entities
Revises: 0019_keyword_tenant_stats
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0020_memory_entities"
down_revision = "0019_keyword_tenant_stats"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"
ENTITY_TYPES = ("person", "place", "organization", "product", "date", "event", "work", "thing")
GRANTED = (
    "(SELECT g.tenant_id FROM public.analyst_grants AS g WHERE g.role_name = current_user::text)"
)
VIEW = """
CREATE VIEW entity_mentions WITH (security_invoker = true) AS
SELECT l.tenant_id, l.entity_key,
       (sum(l.memories))::integer AS memories,
       (sum(l.facts))::integer AS facts,
       (sum(l.memories) + sum(l.facts))::integer AS mentions,
       (SELECT mode() WITHIN GROUP (ORDER BY me.entity_type)
          FROM memory_entities AS me
         WHERE me.tenant_id = l.tenant_id AND me.entity_key = l.entity_key) AS entity_type
  FROM (SELECT m.tenant_id, m.entity_key, count(*) AS memories, 0::bigint AS facts
          FROM memory_entities AS m GROUP BY m.tenant_id, m.entity_key
        UNION ALL
        SELECT f.tenant_id, f.entity_key, 0::bigint, count(*)
          FROM fact_entities AS f GROUP BY f.tenant_id, f.entity_key) AS l
 GROUP BY l.tenant_id, l.entity_key
"""
COMMENTS = (
    ("TABLE memory_entities", "Which entities a memory (a window or a note) names, typed, "
     "written with its facts (app/services/graph/mentions.py): how search follows an "
     "entity from a hit to the memories that share it (migration 0020)."),
    ("COLUMN memory_entities.tenant_id", "Owning tenant."),
    ("COLUMN memory_entities.memory_id", "The memory (memories.id)."),
    ("COLUMN memory_entities.entity_key", "The entity''s key (its name, case-folded, spaces "
     "collapsed), as fact_entities.entity_key and graph_entities.key."),
    ("COLUMN memory_entities.name", "The name as the memory first writes it."),
    ("COLUMN memory_entities.entity_type", "person, place, organization, product, date, "
     "event, work (a title) or thing, as the offline recogniser typed it."),
    ("COLUMN memory_entities.mentions", "How many times the memory names it."),
    ("VIEW entity_mentions", "Per tenant and entity: how many memories (memory_entities) "
     "and facts (fact_entities) name it, and its most frequent type. An entity named by "
     "more rows than search.hub_mentions is a hub, which entity expansion skips."),
    ("COLUMN entity_mentions.tenant_id", "Owning tenant."),
    ("COLUMN entity_mentions.entity_key", "The entity''s key."),
    ("COLUMN entity_mentions.memories", "Memories linked to it."),
    ("COLUMN entity_mentions.facts", "Facts linked to it."),
    ("COLUMN entity_mentions.mentions", "memories + facts: compared with search.hub_mentions."),
    ("COLUMN entity_mentions.entity_type", "Its most frequent type among the memory links "
     "(NULL when only facts name it)."),
)  # fmt: skip


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _roles() -> tuple[str, str, str]:
    """(app role, analyst group, the group's bare name)."""
    app_role = str(context.config.attributes["app_role"])
    group = f"{app_role[:55]}_analyst"
    return _quote(app_role), _quote(group), group


def upgrade() -> None:
    app, group, group_name = _roles()
    types = ", ".join(f"'{t}'" for t in ENTITY_TYPES)
    op.execute(
        f"""
        CREATE TABLE memory_entities (
            tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            memory_id   uuid NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            entity_key  text NOT NULL CHECK (length(entity_key) BETWEEN 1 AND 200),
            name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
            entity_type text NOT NULL CHECK (entity_type IN ({types})),
            mentions    integer NOT NULL DEFAULT 1 CHECK (mentions > 0),
            PRIMARY KEY (tenant_id, memory_id, entity_key)
        )
        """
    )
    op.execute(
        "CREATE INDEX memory_entities_entity ON memory_entities (tenant_id, entity_key, memory_id)"
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON memory_entities TO {app}")
    op.execute("ALTER TABLE memory_entities ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE memory_entities FORCE ROW LEVEL SECURITY")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(
        "CREATE POLICY tenant_isolation ON memory_entities "
        f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
    )
    # The analysts' policies (0015) and fence (0017), as every tenant table has them
    op.execute(
        f"CREATE POLICY analyst_read ON memory_entities FOR SELECT TO {group} "
        f"USING (tenant_id IN {GRANTED})"
    )
    op.execute(
        f"CREATE POLICY analyst_only ON memory_entities AS RESTRICTIVE TO {group} "
        f"USING (tenant_id IN {GRANTED}) WITH CHECK (false)"
    )
    op.execute(
        "CREATE POLICY analyst_fence ON memory_entities FOR SELECT TO CURRENT_USER "
        f"USING (pg_has_role(current_user, '{group_name}', 'MEMBER'))"
    )
    op.execute(VIEW)
    op.execute(f"GRANT SELECT ON entity_mentions TO {app}")
    for target, text in COMMENTS:
        op.execute(f"COMMENT ON {target} IS '{text}'")
    bind = op.get_bind()
    for role in bind.execute(sa.text("SELECT role_name FROM analysts ORDER BY 1")).scalars():
        bind.execute(sa.text("SELECT elephant_analyst_fence(:r)"), {"r": role})
    # The backfill: the worker links the memories stored before now, a batch per job
    op.execute(
        "INSERT INTO jobs (tenant_id, kind, payload, max_attempts) "
        "SELECT t.id, 'link_entities', '{}'::jsonb, 5 FROM tenants AS t "
        "WHERE EXISTS (SELECT 1 FROM memories AS m WHERE m.tenant_id = t.id)"
    )
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0020_memory_entities', updated_at = now()"
    )


def downgrade() -> None:
    # the link_entities jobs stay: rows a rollback must not lose (an earlier worker fails a
    # queued one as a kind it does not know, and loses nothing)
    op.execute("DROP VIEW IF EXISTS entity_mentions")
    bind = op.get_bind()
    for name in bind.execute(sa.text("SELECT name FROM analysts ORDER BY 1")).scalars():
        op.execute(f"DROP VIEW IF EXISTS {_quote('analyst_' + str(name))}.memory_entities")
    op.execute("DROP TABLE IF EXISTS memory_entities")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0019_keyword_tenant_stats', updated_at = now()"
    )
