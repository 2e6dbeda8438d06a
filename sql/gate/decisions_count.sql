-- How many gate decisions a listing's filter matches (app/services/gate/decisions.py,
-- GET /amac/decisions ``total``).
--   the filter's parameters (decision_filter.sql): tenant, decision, kind
SELECT count(*)
  FROM admission_log
 WHERE
    {decision_filter}
