-- Fragment: after a cursor, only the facts older than its row (created_at, id).
AND (f.created_at, f.id) < (%(after_at)s, %(after_id)s)
