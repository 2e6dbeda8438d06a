-- After a restore, name each Apache AGE graph by the oid of its schema again
-- (app/services/ops/backup/restore.py; docs/backup.md for a restore by hand).
-- AGE 1.7.0 keeps ag_graph.graphid = the oid of the graph's schema and ag_label.graph =
-- that graphid; pg_dump dumps both tables (extension config tables), but a restore
-- gives the schema a new oid and cypher() then fails with "graph with oid N does not
-- exist". One statement: the foreign key ag_label -> ag_graph is checked at its end,
-- when both tables agree again. No parameters; idempotent.
WITH moved AS (
    SELECT graphid AS old_id, namespace::oid AS new_id
    FROM ag_catalog.ag_graph
    WHERE graphid <> namespace::oid
),
relabelled AS (
    UPDATE ag_catalog.ag_label AS l SET graph = moved.new_id
    FROM moved WHERE l.graph = moved.old_id
    RETURNING 1
),
renumbered AS (
    UPDATE ag_catalog.ag_graph AS g SET graphid = moved.new_id
    FROM moved WHERE g.graphid = moved.old_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM renumbered) AS graphs, (SELECT count(*) FROM relabelled) AS labels;
