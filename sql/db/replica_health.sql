-- A read replica's health (app/db/replicas.py): whether it is in recovery (a standby)
-- and its lag in seconds. The lag is 0 while everything received is replayed: an idle
-- primary sends no commits, and now() - pg_last_xact_replay_timestamp() would grow
-- although nothing is missing. No parameters.
SELECT pg_is_in_recovery(),
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())
       END::float8
