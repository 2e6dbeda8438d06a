-- AGE provisioning (app/services/graph/age.py, _provision): the labels the tenant's
-- graph has already, so only the missing ones are created. Runs as the migrator, on
-- AGE's catalog (no tenant rows).
-- Parameters, in order: the graph's name.
SELECT l.name
  FROM ag_catalog.ag_label AS l
  JOIN ag_catalog.ag_graph AS g ON g.graphid = l.graph
 WHERE g.name = %s
