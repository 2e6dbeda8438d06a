-- Fragment: after a cursor, only the memories older than its row (created_at, id).
AND (m.created_at, m.id) < (%(after_at)s, %(after_id)s)
