"""Retrieval: passages (turns and parts of long texts, embedded whole) and preference facts.

A window's text is cut at the embedding model's token limit, so evidence deep in a
long turn was invisible to the dense lane. A passage is one turn, or an overlapping
part of a long turn or long note, with its own vector; the windows lane scores a
window by its own vector and by its best passage (late interaction over turns).

- `turn_id` or `memory_id` (a long note): exactly one is set; deleting the turn or
  the note deletes its passages.
- `char_start`, `char_end`: the part of the turn's (note's) text the passage holds;
  the text itself is not copied.
- Turns stored before this migration have no passages: an `embed_memories` job is
  queued for every tenant that has turns, and it embeds them.

Preference facts (fact_type `preference`): standing preferences and instructions
("always answer in British English", "I'm vegetarian"), found by a partial index
for the search lane that surfaces them.

Revision ID: 0007_retrieval
Revises: 0006_access_control
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import context, op

revision = "0007_retrieval"
down_revision = "0006_access_control"
branch_labels = None
depends_on = None

TENANT_SETTING = "elephant.tenant_id"


def _role() -> str:
    return '"' + str(context.config.attributes["app_role"]).replace('"', '""') + '"'


def _dim() -> int:
    dim = int(context.config.attributes["embedding_dim"])
    if not 0 < dim <= 16000:
        raise ValueError(f"embedding dimension {dim} is out of range 1..16000")
    return dim


def upgrade() -> None:
    op.execute(
        f"""
        CREATE TABLE passages (
            id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
            turn_id    bigint REFERENCES turns (id) ON DELETE CASCADE,
            memory_id  uuid REFERENCES memories (id) ON DELETE CASCADE,
            ordinal    integer NOT NULL CHECK (ordinal >= 0),
            char_start integer NOT NULL CHECK (char_start >= 0),
            char_end   integer NOT NULL CHECK (char_end > char_start),
            embedding  vector({_dim()}) NOT NULL,
            CHECK ((turn_id IS NULL) <> (memory_id IS NULL))
        )
        """
    )
    op.execute("CREATE UNIQUE INDEX passages_turn ON passages (turn_id, ordinal)")
    op.execute("CREATE UNIQUE INDEX passages_memory ON passages (memory_id, ordinal)")
    op.execute(
        "CREATE INDEX passages_embedding_hnsw ON passages "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
    )
    # a window's turns are found by (conversation, seq range): turns has UNIQUE
    # (conversation_id, seq); windows are found from a turn by conversation
    op.execute("CREATE INDEX memories_conversation_turns ON memories (conversation_id, turn_start)")
    setting = f"current_setting('{TENANT_SETTING}', true)"
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON passages TO {_role()}")
    op.execute("ALTER TABLE passages ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE passages FORCE ROW LEVEL SECURITY")
    op.execute(
        "CREATE POLICY tenant_isolation ON passages "
        f"USING (tenant_id = {setting}) WITH CHECK (tenant_id = {setting})"
    )
    op.execute("ALTER TABLE facts DROP CONSTRAINT IF EXISTS facts_fact_type_check")
    op.execute(
        "ALTER TABLE facts ADD CONSTRAINT facts_fact_type_check "
        "CHECK (fact_type IN ('world', 'experience', 'inference', 'preference'))"
    )
    op.execute("CREATE INDEX facts_preferences ON facts (tenant_id) WHERE fact_type = 'preference'")
    # The owner reads every tenant's turns: a table owner that is not a superuser is
    # held to row-level security on a FORCEd table (turns is), so FORCE is lifted for
    # this one statement, inside the migration's transaction, and put back. (jobs is not
    # FORCEd.)
    op.execute("ALTER TABLE turns NO FORCE ROW LEVEL SECURITY")
    op.execute(
        "INSERT INTO jobs (tenant_id, kind) SELECT DISTINCT tenant_id, 'embed_memories' FROM turns"
    )
    op.execute("ALTER TABLE turns FORCE ROW LEVEL SECURITY")
    op.execute("UPDATE elephant_meta SET schema_version = '0007_retrieval', updated_at = now()")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS facts_preferences")
    op.execute("DELETE FROM facts WHERE fact_type = 'preference'")
    op.execute("ALTER TABLE facts DROP CONSTRAINT IF EXISTS facts_fact_type_check")
    op.execute(
        "ALTER TABLE facts ADD CONSTRAINT facts_fact_type_check "
        "CHECK (fact_type IN ('world', 'experience', 'inference'))"
    )
    op.execute("DROP TABLE IF EXISTS passages")
    op.execute("DROP INDEX IF EXISTS memories_conversation_turns")
    op.execute(
        "UPDATE elephant_meta SET schema_version = '0006_access_control', updated_at = now()"
    )
