"""Memory lifecycle: activation (decay and refresh), and the maintenance jobs.

- activation.py: how alive a memory or fact is, computed when read (sql function
  elephant_activation), refreshed by use (search hits, get by id, helpful feedback);
- decay.py, sweep.py, backfill.py, retention.py: what each maintenance kind does;
- maintenance.py: the kinds as queue jobs, their runs, their schedule, their state;
- run.py: running one now (``elephant maintain``), through the queue.

Nothing is imported here, so that the job runner can import maintenance.py without
pulling in the rest.
"""
