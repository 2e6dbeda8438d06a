-- The server's version and preloaded libraries (app/db/capabilities.py, detect).
-- shared_preload_libraries is read through pg_settings: a role without
-- pg_read_all_settings (the owner of a database on a managed service may be one) gets
-- NULL there instead of an error. No parameters.
SELECT current_setting('server_version'),
       current_setting('server_version_num')::int,
       (SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries')
