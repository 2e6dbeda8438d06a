-- A store item as app/services/store/items.py reads it, against the alias m (spliced
-- where a line holds only {item_columns}). This header is not spliced.
m.item_namespace, m.item_key, m.item_value, m.item_created_at, m.created_at,
m.id, m.superseded_at, m.superseded_by
