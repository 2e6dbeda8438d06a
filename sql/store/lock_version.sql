-- Store (app/services/store/items.py, _supersede): the version about to be replaced or
-- deleted, locked FOR UPDATE. An extraction job of that version holds it FOR KEY SHARE
-- while it writes its facts (sql/jobs/hold_notes.sql), which conflicts: this waits until
-- those facts are committed, so supersede_item_facts.sql closes them; or the job comes
-- after, finds the version superseded and writes nothing.
-- Parameters: tenant, memory.
SELECT 1 FROM memories WHERE tenant_id = %(tenant)s AND id = %(memory)s FOR UPDATE
