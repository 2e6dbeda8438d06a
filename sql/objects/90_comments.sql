-- The schema, documented in the database itself: read it with `\d+ memories`, `\dv+`,
-- `\df+ elephant_*`, or obj_description('memories'::regclass) and
-- col_description('memories'::regclass, attnum) in SQL.
--
-- Re-applied on every upgrade (see migrations/README.md), so the comments track the
-- code: edit a comment here, never in a migration. A new table, view or column gets
-- its comment here (or in the migration that creates it) in the same change:
-- tests/integration/test_schema_comments.py fails naming every one that has none.

-- ---------------------------------------------------------------- tenants, meta

COMMENT ON TABLE elephant_meta IS
    'One row: the embedding model and dimension the database was initialised with, and the schema revision. Starting with another embedding.dim fails instead of mixing vectors.';
COMMENT ON COLUMN elephant_meta.singleton IS 'Always true: keeps the table at one row.';
COMMENT ON COLUMN elephant_meta.embedding_model IS 'Embedding model every vector in this database was made with.';
COMMENT ON COLUMN elephant_meta.embedding_dim IS 'Dimension of every embedding column (vector(dim)), fixed at initialisation.';
COMMENT ON COLUMN elephant_meta.schema_version IS 'Alembic revision the schema is at (as alembic_version.version_num).';
COMMENT ON COLUMN elephant_meta.created_at IS 'When the database was initialised.';
COMMENT ON COLUMN elephant_meta.updated_at IS 'When the schema last changed revision.';

COMMENT ON TABLE tenants IS
    'One row per tenant. Every tenant-owned row carries tenant_id; row-level security shows the app role only the rows of the tenant in the session setting elephant.tenant_id.';
COMMENT ON COLUMN tenants.id IS 'Tenant id: lower-case letters, digits, _ and -, at most 63 characters.';
COMMENT ON COLUMN tenants.name IS 'Display name, optional.';
COMMENT ON COLUMN tenants.settings IS 'Per-tenant settings (jsonb), e.g. the owner: who "I" is in a note.';
COMMENT ON COLUMN tenants.created_at IS 'When the tenant was created (first write or explicit creation).';

-- ---------------------------------------------------------------- conversations, turns

COMMENT ON TABLE conversations IS
    'A committed conversation (one session of turns): the caller''s id for it, where it came from, its date.';
COMMENT ON COLUMN conversations.id IS 'Conversation id.';
COMMENT ON COLUMN conversations.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN conversations.external_id IS 'The caller''s id for the conversation, unique per tenant; a second commit with it appends turns.';
COMMENT ON COLUMN conversations.source IS 'Where it came from (api, mcp, ingest, a client name).';
COMMENT ON COLUMN conversations.session_date IS 'When the session took place; relative dates in its turns are resolved against it.';
COMMENT ON COLUMN conversations.metadata IS 'Caller metadata (jsonb).';
COMMENT ON COLUMN conversations.created_at IS 'When it was first committed.';

COMMENT ON TABLE turns IS
    'The raw transcript, lossless: one row per turn of a conversation, in order. Windows (memories of kind window) and passages point into it.';
COMMENT ON COLUMN turns.id IS 'Turn id (passages.turn_id).';
COMMENT ON COLUMN turns.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN turns.conversation_id IS 'Conversation the turn belongs to.';
COMMENT ON COLUMN turns.seq IS 'Position in the conversation, from 0; unique per conversation. memories.turn_start/turn_end refer to it.';
COMMENT ON COLUMN turns.speaker IS 'Who spoke (a name, or user/assistant).';
COMMENT ON COLUMN turns.text IS 'What was said, verbatim.';
COMMENT ON COLUMN turns.occurred_at IS 'When it was said, if known (else the session date applies).';
COMMENT ON COLUMN turns.source_turn_id IS 'The caller''s id for the turn, e.g. LoCoMo D1:3; facts and memories cite it in source_turn_ids.';
COMMENT ON COLUMN turns.metadata IS 'Caller metadata (jsonb).';
COMMENT ON COLUMN turns.created_at IS 'When it was stored.';

-- ---------------------------------------------------------------- memories, passages

COMMENT ON TABLE memories IS
    'Verbatim retrieval units: notes committed one by one (kind note) and overlapping windows of conversation turns (kind window), with their vector and full text. Never overwritten: a duplicate raises seen_count.';
COMMENT ON COLUMN memories.id IS 'Memory id.';
COMMENT ON COLUMN memories.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN memories.kind IS 'note (committed alone) or window (consecutive turns of a conversation).';
COMMENT ON COLUMN memories.text IS 'The text, verbatim; a window renders each turn with its date and speaker.';
COMMENT ON COLUMN memories.embedding IS 'Dense vector of the text (model and dimension in elephant_meta); NULL until embedded (the embed_memories job fills it). HNSW index, cosine.';
COMMENT ON COLUMN memories.tsv IS 'Generated English tsvector of text, for the keyword lane (GIN index).';
COMMENT ON COLUMN memories.source IS 'Where it came from (api, mcp, ingest, a client name); search can filter on it.';
COMMENT ON COLUMN memories.importance IS 'Importance 0..100 (default 50); feedback moves it (+5 helpful, -10 not); weighs activation.';
COMMENT ON COLUMN memories.conversation_id IS 'Conversation of a window (NULL for a note).';
COMMENT ON COLUMN memories.turn_start IS 'First turn (turns.seq) a window covers.';
COMMENT ON COLUMN memories.turn_end IS 'Last turn (turns.seq) a window covers, inclusive.';
COMMENT ON COLUMN memories.source_turn_ids IS 'The caller''s ids of the turns it holds (turns.source_turn_id).';
COMMENT ON COLUMN memories.event_at IS 'When what it tells happened (a note''s occurred_at, a window''s turn dates); search''s time filters and date prior read it.';
COMMENT ON COLUMN memories.content_hash IS 'Hash of the normalised text, unique per tenant: exact duplicates are not stored twice.';
COMMENT ON COLUMN memories.seen_count IS 'How often this text was committed (1 + duplicates).';
COMMENT ON COLUMN memories.last_seen_at IS 'When it was last committed (or a duplicate of it).';
COMMENT ON COLUMN memories.metadata IS 'Caller metadata (jsonb).';
COMMENT ON COLUMN memories.created_at IS 'When it was stored.';
COMMENT ON COLUMN memories.item_namespace IS 'The store item (app/services/store, LangGraph''s BaseStore) this note is a version of: its namespace, labels joined by ''.''; NULL for a plain note or window.';
COMMENT ON COLUMN memories.item_key IS 'The store item''s key in its namespace; one current version per (tenant, namespace, key).';
COMMENT ON COLUMN memories.item_value IS 'The store item''s value (JSON object) as put; text holds what of it is indexed.';
COMMENT ON COLUMN memories.item_created_at IS 'When the item was first put (later versions keep it); created_at is when this version was.';
COMMENT ON COLUMN memories.superseded_at IS 'When a newer version of the item replaced this note, or the item was deleted; search skips superseded notes, the history keeps them.';
COMMENT ON COLUMN memories.superseded_by IS 'The version that replaced this one (NULL: current, or deleted).';

COMMENT ON TABLE passages IS
    'A vector per turn, and per sentence-aligned part of a long turn or long note: what the windows lane''s late interaction reads. The text is not copied: char_start/char_end point into the turn''s (note''s) text.';
COMMENT ON COLUMN passages.id IS 'Passage id.';
COMMENT ON COLUMN passages.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN passages.turn_id IS 'Turn the passage is (part of); exactly one of turn_id and memory_id is set.';
COMMENT ON COLUMN passages.memory_id IS 'Long note the passage is part of; exactly one of turn_id and memory_id is set.';
COMMENT ON COLUMN passages.ordinal IS 'Position of the part within its turn or note, from 0.';
COMMENT ON COLUMN passages.char_start IS 'First character of the part in the turn''s (note''s) text, from 0.';
COMMENT ON COLUMN passages.char_end IS 'End of the part (exclusive): substr(text, char_start + 1, char_end - char_start).';
COMMENT ON COLUMN passages.embedding IS 'Dense vector of the part (HNSW index, cosine).';

-- ---------------------------------------------------------------- facts

COMMENT ON TABLE facts IS
    'Atomic statements extracted from memories (or recorded as graph observations), bi-temporal: valid_from/valid_to say when a fact was true, recorded_at/expired_at when we knew it. Nothing is deleted: a contradicted fact is closed and superseded. current_facts shows those true now.';
COMMENT ON COLUMN facts.id IS 'Fact id.';
COMMENT ON COLUMN facts.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN facts.memory_id IS 'Memory it was extracted from (NULL for graph observations).';
COMMENT ON COLUMN facts.conversation_id IS 'Conversation it was extracted from, if any.';
COMMENT ON COLUMN facts.source_turn_ids IS 'The caller''s ids of the turns that support it (turns.source_turn_id).';
COMMENT ON COLUMN facts.subject IS 'Who or what the fact is about (an entity name); an observation''s entity.';
COMMENT ON COLUMN facts.text IS 'The statement.';
COMMENT ON COLUMN facts.embedding IS 'Dense vector of subject and text; NULL until embedded. HNSW index, cosine.';
COMMENT ON COLUMN facts.tsv IS 'Generated English tsvector of text, for the keyword lane (GIN index).';
COMMENT ON COLUMN facts.fact_type IS 'world (about the world), experience (what someone did or lived), inference (derived), preference (a standing preference or instruction).';
COMMENT ON COLUMN facts.confidence IS 'Confidence 0..1; at most 0.5 when only an assistant said it.';
COMMENT ON COLUMN facts.entities IS 'Entities the extractor named, as a jsonb array of {name, type}.';
COMMENT ON COLUMN facts.valid_from IS 'When the fact became true (valid time), if known.';
COMMENT ON COLUMN facts.valid_to IS 'When it stopped being true (set when a newer fact contradicts it); NULL while true.';
COMMENT ON COLUMN facts.recorded_at IS 'When we learned it (transaction time).';
COMMENT ON COLUMN facts.expired_at IS 'When we stopped believing it (superseded or retracted); NULL while believed.';
COMMENT ON COLUMN facts.status IS 'active, superseded (by superseded_by) or retracted.';
COMMENT ON COLUMN facts.superseded_by IS 'The fact that replaced this one.';
COMMENT ON COLUMN facts.metadata IS 'Extra data (jsonb), e.g. {"said_by": "assistant"}.';
COMMENT ON COLUMN facts.created_at IS 'When the row was written.';
COMMENT ON COLUMN facts.importance IS 'Importance 0..100 (default 50); feedback moves it.';
COMMENT ON COLUMN facts.content_hash IS 'Hash of the normalised fact, unique per tenant: the same fact is stored once.';
COMMENT ON COLUMN facts.subject_key IS 'Generated lower(subject): an equality the index answers under row-level security (contradiction candidates).';
COMMENT ON COLUMN facts.source IS 'Source of the memory it came from (or of the graph write).';
COMMENT ON COLUMN facts.observation_kind IS 'For a graph observation: note, decided, rejected, because or touches; NULL for extracted facts.';
COMMENT ON COLUMN facts.observation_key IS 'Entity + kind + normalised text of an observation: one active copy per entity.';

COMMENT ON TABLE fact_entities IS
    'Which graph entity a fact is about (its subject; an observation''s entity) or mentions: how the graph lane reaches facts through an index.';
COMMENT ON COLUMN fact_entities.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN fact_entities.fact_id IS 'The fact.';
COMMENT ON COLUMN fact_entities.entity_key IS 'The entity''s key (its name, case-folded, spaces collapsed), as graph_entities.key.';
COMMENT ON COLUMN fact_entities.link IS 'about (the fact''s subject) or mentions.';

COMMENT ON TABLE contradictions IS
    'Detected contradictions between two facts of the same subject: the older fact was closed in time (valid_to, expired_at) and superseded by the newer.';
COMMENT ON COLUMN contradictions.id IS 'Contradiction id.';
COMMENT ON COLUMN contradictions.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN contradictions.older_fact_id IS 'The fact that was true before (now superseded).';
COMMENT ON COLUMN contradictions.newer_fact_id IS 'The fact that contradicts it.';
COMMENT ON COLUMN contradictions.detector IS 'What found it: the offline rules or an LLM.';
COMMENT ON COLUMN contradictions.score IS 'The detector''s confidence, 0..1.';
COMMENT ON COLUMN contradictions.reason IS 'Why the two contradict, in words.';
COMMENT ON COLUMN contradictions.created_at IS 'When it was detected.';

-- ---------------------------------------------------------------- write path: gate, queue, usage, feedback

COMMENT ON TABLE admission_log IS
    'Every decision of the admission gate (A-MAC), accepted or not: scores, threshold, reason, scorer. Auditable; /amac/metrics reads it.';
COMMENT ON COLUMN admission_log.id IS 'Decision id.';
COMMENT ON COLUMN admission_log.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN admission_log.memory_id IS 'Memory stored (accepted, forced) or matched (duplicate); NULL when rejected.';
COMMENT ON COLUMN admission_log.kind IS 'note or window.';
COMMENT ON COLUMN admission_log.source IS 'Source of the text.';
COMMENT ON COLUMN admission_log.text_preview IS 'Start of the text judged.';
COMMENT ON COLUMN admission_log.content_hash IS 'Hash of the text judged (as memories.content_hash).';
COMMENT ON COLUMN admission_log.relevance IS 'Relevance score 0..10.';
COMMENT ON COLUMN admission_log.novelty IS 'Novelty score 0..10, measured against the nearest stored memories.';
COMMENT ON COLUMN admission_log.specificity IS 'Specificity score 0..10.';
COMMENT ON COLUMN admission_log.composite IS 'Weighted composite of the three scores, compared to threshold.';
COMMENT ON COLUMN admission_log.threshold IS 'Threshold in force (default 4.0).';
COMMENT ON COLUMN admission_log.decision IS 'accepted, rejected, forced (stored whatever the scores) or duplicate.';
COMMENT ON COLUMN admission_log.reason IS 'Why, in words.';
COMMENT ON COLUMN admission_log.scorer IS 'What scored it (offline heuristics, an LLM, dedup).';
COMMENT ON COLUMN admission_log.created_at IS 'When the decision was made.';

COMMENT ON TABLE jobs IS
    'The work queue (fact extraction, embedding backfill): claimed with FOR UPDATE SKIP LOCKED by the worker role through elephant_claim_jobs, leased, retried with backoff.';
COMMENT ON COLUMN jobs.id IS 'Job id.';
COMMENT ON COLUMN jobs.tenant_id IS 'Tenant the job works for; it runs inside that tenant.';
COMMENT ON COLUMN jobs.kind IS 'What to do: extract_facts, embed_memories.';
COMMENT ON COLUMN jobs.payload IS 'The job''s input (jsonb), e.g. the memories to extract from.';
COMMENT ON COLUMN jobs.status IS 'queued, running, done or failed (attempts used up).';
COMMENT ON COLUMN jobs.attempts IS 'Attempts made so far.';
COMMENT ON COLUMN jobs.max_attempts IS 'Attempts allowed before the job is failed.';
COMMENT ON COLUMN jobs.run_after IS 'Not claimed before this instant (retry backoff).';
COMMENT ON COLUMN jobs.last_error IS 'Error of the last failed attempt.';
COMMENT ON COLUMN jobs.locked_by IS 'Worker that holds the job while it runs.';
COMMENT ON COLUMN jobs.locked_at IS 'When that worker claimed it.';
COMMENT ON COLUMN jobs.created_at IS 'When it was queued.';
COMMENT ON COLUMN jobs.updated_at IS 'Last change of status.';
COMMENT ON COLUMN jobs.finished_at IS 'When it was done (or failed for good).';
COMMENT ON COLUMN jobs.lease_expires_at IS 'A running job is claimable again after this instant (its worker renews the lease while it runs).';

COMMENT ON TABLE llm_usage IS
    'One row per LLM call (extraction, gate, contradictions, reflect, handoffs): tokens, latency, outcome, so cost is auditable per tenant and operation.';
COMMENT ON COLUMN llm_usage.id IS 'Call id.';
COMMENT ON COLUMN llm_usage.tenant_id IS 'Tenant the call worked for.';
COMMENT ON COLUMN llm_usage.operation IS 'What the call was for: extract_facts, contradiction, reflect, paraphrase, handoff.';
COMMENT ON COLUMN llm_usage.provider IS 'LLM provider (anthropic, ollama).';
COMMENT ON COLUMN llm_usage.model IS 'Model name.';
COMMENT ON COLUMN llm_usage.tokens_in IS 'Input tokens.';
COMMENT ON COLUMN llm_usage.tokens_out IS 'Output tokens.';
COMMENT ON COLUMN llm_usage.latency_ms IS 'Wall time of the call, all attempts, in milliseconds.';
COMMENT ON COLUMN llm_usage.attempts IS 'Attempts made (retries included).';
COMMENT ON COLUMN llm_usage.ok IS 'Whether the call succeeded.';
COMMENT ON COLUMN llm_usage.error IS 'Error when it did not.';
COMMENT ON COLUMN llm_usage.created_at IS 'When the call was made.';

COMMENT ON TABLE feedback IS
    'Feedback on a search result (a memory or a fact): helpful or not, and how it moved the importance.';
COMMENT ON COLUMN feedback.id IS 'Feedback id.';
COMMENT ON COLUMN feedback.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN feedback.memory_id IS 'The memory judged; exactly one of memory_id and fact_id is set.';
COMMENT ON COLUMN feedback.fact_id IS 'The fact judged; exactly one of memory_id and fact_id is set.';
COMMENT ON COLUMN feedback.helpful IS 'Whether the result helped.';
COMMENT ON COLUMN feedback.delta IS 'Change applied to the importance (+5 helpful, -10 not).';
COMMENT ON COLUMN feedback.importance_after IS 'Importance after the change (0..100).';
COMMENT ON COLUMN feedback.created_at IS 'When the feedback was given.';

-- ---------------------------------------------------------------- sessions

COMMENT ON TABLE handoffs IS
    'Sessions and handoffs: what a closed session leaves the next one, per project (summary, decisions, open questions, next steps). The latest per project is what the next session fetches.';
COMMENT ON COLUMN handoffs.id IS 'Handoff id.';
COMMENT ON COLUMN handoffs.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN handoffs.project IS 'Project the session worked on (1-200 characters).';
COMMENT ON COLUMN handoffs.conversation_id IS 'The closed session''s stored transcript.';
COMMENT ON COLUMN handoffs.summary IS 'What the session did.';
COMMENT ON COLUMN handoffs.decisions IS 'Decisions taken (jsonb array of strings).';
COMMENT ON COLUMN handoffs.open_questions IS 'Questions left open (jsonb array of strings).';
COMMENT ON COLUMN handoffs.next_steps IS 'Next steps (jsonb array of strings).';
COMMENT ON COLUMN handoffs.generator IS 'What wrote the handoff: provider:model of the LLM, offline, or offline (fallback: why the LLM failed).';
COMMENT ON COLUMN handoffs.metadata IS 'Caller metadata (jsonb).';
COMMENT ON COLUMN handoffs.created_at IS 'When the session was closed.';

-- ---------------------------------------------------------------- knowledge graph

COMMENT ON TABLE graphs IS
    'The tenant''s Apache AGE graph: one per tenant, created on its first graph write, in schema graph_name (vertex label Entity, one edge label per relation type). Read it through graph_entities and graph_relations.';
COMMENT ON COLUMN graphs.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN graphs.graph_name IS 'AGE graph (and schema) name: g_<tenant>_<hash>, see elephant_graph_name().';
COMMENT ON COLUMN graphs.created_at IS 'When the graph was created.';

COMMENT ON VIEW graph_entities IS
    'Entities of the knowledge graph as ordinary columns, every tenant''s graph in one view. Runs with the caller''s rights: the app role sees its tenant only.';
COMMENT ON COLUMN graph_entities.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN graph_entities.key IS 'Entity key: the name case-folded with spaces collapsed (fact_entities.entity_key).';
COMMENT ON COLUMN graph_entities.name IS 'Entity name as first recorded.';
COMMENT ON COLUMN graph_entities.role IS 'Role from the closed entity vocabulary (entityType), e.g. person, decision, artifact.';
COMMENT ON COLUMN graph_entities.domain IS 'Subject domain from the closed vocabulary, e.g. software.';
COMMENT ON COLUMN graph_entities.epistemic IS 'assertion, hypothesis, speculation or unknown (default).';
COMMENT ON COLUMN graph_entities.source IS 'What created it: record (the graph API or tools) or ingest (named by fact extraction).';
COMMENT ON COLUMN graph_entities.valid_from IS 'Since when the entity holds.';
COMMENT ON COLUMN graph_entities.valid_to IS 'When it was invalidated (revised, superseded); NULL while current.';
COMMENT ON COLUMN graph_entities.created_at IS 'When it was recorded.';
COMMENT ON COLUMN graph_entities.updated_at IS 'When it last changed.';

COMMENT ON VIEW graph_relations IS
    'Relations of the knowledge graph (edges) with the names of both ends, every tenant''s graph in one view. Runs with the caller''s rights.';
COMMENT ON COLUMN graph_relations.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN graph_relations.source IS 'Name of the entity the relation starts from.';
COMMENT ON COLUMN graph_relations.relation IS 'Relation type from the canonical vocabulary (aliases folded), e.g. depends_on, supersedes.';
COMMENT ON COLUMN graph_relations.target IS 'Name of the entity it points to.';
COMMENT ON COLUMN graph_relations.epistemic IS 'assertion, hypothesis, speculation or unknown (default).';
COMMENT ON COLUMN graph_relations.valid_from IS 'Since when the relation holds.';
COMMENT ON COLUMN graph_relations.valid_to IS 'When it stopped holding; NULL while current.';
COMMENT ON COLUMN graph_relations.recorded_at IS 'When it was recorded.';

COMMENT ON VIEW current_facts IS
    'Facts true now: active, not expired, inside their validity interval, with the entities they are about or mention. Runs with the caller''s rights.';
COMMENT ON COLUMN current_facts.tenant_id IS 'Owning tenant.';
COMMENT ON COLUMN current_facts.id IS 'Fact id (facts.id).';
COMMENT ON COLUMN current_facts.text IS 'The statement.';
COMMENT ON COLUMN current_facts.subject IS 'Who or what it is about.';
COMMENT ON COLUMN current_facts.fact_type IS 'world, experience, inference or preference.';
COMMENT ON COLUMN current_facts.observation_kind IS 'For a graph observation: note, decided, rejected, because or touches.';
COMMENT ON COLUMN current_facts.source IS 'Where it came from.';
COMMENT ON COLUMN current_facts.valid_from IS 'When it became true, if known.';
COMMENT ON COLUMN current_facts.valid_to IS 'When it stops being true, if known (in the future).';
COMMENT ON COLUMN current_facts.recorded_at IS 'When we learned it.';
COMMENT ON COLUMN current_facts.importance IS 'Importance 0..100.';
COMMENT ON COLUMN current_facts.confidence IS 'Confidence 0..1.';
COMMENT ON COLUMN current_facts.entity_keys IS 'Keys of the entities it is about or mentions (fact_entities), sorted.';

-- ---------------------------------------------------------------- access control (admin only)

COMMENT ON TABLE api_keys IS
    'Admin only (the app role cannot read it): API keys as prefix and SHA-256 of the whole key, never the key itself; tenant, scopes, expiry, revocation.';
COMMENT ON COLUMN api_keys.id IS 'Key id.';
COMMENT ON COLUMN api_keys.prefix IS 'Public prefix of the key, unique: how a presented key is found.';
COMMENT ON COLUMN api_keys.secret_hash IS 'SHA-256 (hex) of the whole key.';
COMMENT ON COLUMN api_keys.name IS 'Label given at creation.';
COMMENT ON COLUMN api_keys.tenant_id IS 'Tenant the key may act for; NULL: every tenant (admin keys only).';
COMMENT ON COLUMN api_keys.scopes IS 'Subset of read, write, admin.';
COMMENT ON COLUMN api_keys.created_by IS 'Who created it (cli, or the admin key''s prefix).';
COMMENT ON COLUMN api_keys.created_at IS 'When it was created.';
COMMENT ON COLUMN api_keys.expires_at IS 'Refused after this instant; NULL: never expires.';
COMMENT ON COLUMN api_keys.last_used_at IS 'Last verified use (updated at most once a minute).';
COMMENT ON COLUMN api_keys.revoked_at IS 'Refused since this instant; NULL while valid.';

COMMENT ON TABLE audit_log IS
    'Admin only: admin actions, key lifecycle and use, denied requests and erasures. The app role writes it only through elephant_audit() and cannot read it.';
COMMENT ON COLUMN audit_log.id IS 'Entry id.';
COMMENT ON COLUMN audit_log.at IS 'When it happened.';
COMMENT ON COLUMN audit_log.tenant_id IS 'Tenant concerned, if any.';
COMMENT ON COLUMN audit_log.key_prefix IS 'Prefix of the API key used, if any.';
COMMENT ON COLUMN audit_log.action IS 'What was done: key.create, key.revoke, key.used, erase, or the method and path of a request.';
COMMENT ON COLUMN audit_log.target IS 'What it was done to.';
COMMENT ON COLUMN audit_log.outcome IS 'ok, denied or failed.';
COMMENT ON COLUMN audit_log.client IS 'Client address or name.';
COMMENT ON COLUMN audit_log.detail IS 'Details (jsonb).';

-- ---------------------------------------------------------------- functions

COMMENT ON FUNCTION elephant_graph_entities() IS
    'Rows of graph_entities: the Entity vertices of every graph in graphs the caller may see.';
COMMENT ON FUNCTION elephant_graph_relations() IS
    'Rows of graph_relations: the edges of every graph in graphs the caller may see, with both ends named.';
COMMENT ON FUNCTION elephant_graph_name(text) IS
    'Graph (schema) name of a tenant, as the application derives it.';
COMMENT ON FUNCTION elephant_secure_graph(text, text) IS
    'Puts row-level security bound to the tenant on every table of its graph; run by the migrator, idempotent.';
COMMENT ON FUNCTION elephant_drop_tenant_graph() IS
    'Trigger: deleting a tenant drops its graph.';
COMMENT ON FUNCTION elephant_claim_jobs(text, integer, integer) IS
    'Worker role only: claims up to p_limit due jobs of any tenant (SKIP LOCKED) with a lease of p_lease_seconds.';
COMMENT ON FUNCTION elephant_renew_leases(text, bigint[], integer) IS
    'Worker role only: renews the leases of the jobs this worker runs (heartbeat).';
COMMENT ON FUNCTION elephant_release_jobs(text, bigint[]) IS
    'Worker role only: hands a stopping worker''s unfinished jobs back to the queue.';
COMMENT ON FUNCTION elephant_audit(text, text, text, text, text, text, jsonb) IS
    'The one way the app role writes audit_log.';

-- ---------------------------------------------------------------- activation (migrations 0010, 0012)

COMMENT ON FUNCTION elephant_activation(real, timestamptz, integer, timestamptz, double precision, double precision, double precision) IS
    'How alive a memory or fact is, 0-1: min(1, importance/100 x (1 + access_boost x ln(1 + access_count))) x 0.5^(age / half-life), age from the anchor (when it was last stored, seen or used) to p_at, the half-life x importance_factor^((importance - 50) / 50): longer for important rows. Inlined by the planner (no SET clause). E.g. elephant_activation(m.importance, greatest(m.created_at, m.last_seen_at, a.last_accessed_at), a.access_count, now(), 23, 3, 0.25) FROM memories AS m LEFT JOIN access_stats AS a ON a.item_id = m.id.';
