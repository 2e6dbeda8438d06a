"""The web console: its login sessions, and the text of rejected notes.

- `console_sessions`: one row per signed-in browser. The cookie holds a random token;
  the row holds its SHA-256 and the API key it was opened with, so revoking (or
  expiring) the key ends its sessions, and signing out deletes the row. The app role
  reaches the table only through the functions below (row-level security, no policy),
  as with api_keys.
- `admission_log.rejected_text`: the whole text of a rejected note or window (the log
  kept only a preview), so an operator can admit it later; NULL for other decisions.
- `admission_log.conversation_id`, `turn_start`, `turn_end`: which turns a window
  decision was about, so a transcript shows every window (stored, duplicate or
  rejected) exactly, and erasing a conversation finds its rejected windows.

Revision ID: 0011_console
Revises: 0010_lifecycle
Create Date: 2026-12-11
"""

from __future__ import annotations

from alembic import context, op

revision = "0011_console"
down_revision = "0010_lifecycle"
branch_labels = None
depends_on = None

OPEN_FUNCTION = "elephant_console_open(text, uuid, integer, text)"
SESSION_FUNCTION = "elephant_console_session(text)"
CLOSE_FUNCTION = "elephant_console_close(text)"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def upgrade() -> None:
    app = _quote(str(context.config.attributes["app_role"]))
    op.execute(
        """
        CREATE TABLE console_sessions (
            token_hash   text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
            key_id       uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
            created_at   timestamptz NOT NULL DEFAULT now(),
            expires_at   timestamptz NOT NULL,
            client       text
        )
        """
    )
    op.execute("CREATE INDEX console_sessions_key ON console_sessions (key_id)")
    op.execute("CREATE INDEX console_sessions_expires ON console_sessions (expires_at)")
    op.execute("ALTER TABLE console_sessions ENABLE ROW LEVEL SECURITY")
    for column, text in (
        ("", "Signed-in web console sessions (/ui). The browser holds the token in an "
             "HttpOnly cookie; only its SHA-256 is kept. Deleted at sign-out, with the key, "
             "and when expired (migration 0011)."),
        (".token_hash", "SHA-256 (hex) of the session token in the cookie."),
        (".key_id", "The API key the session was opened with (api_keys.id): its scopes and "
                    "tenant are those of the session; its revocation or expiry ends the session."),
        (".created_at", "When the browser signed in."),
        (".expires_at", "When the session ends (console.session_hours after sign-in)."),
        (".client", "Address the session was opened from."),
    ):  # fmt: skip
        target = "TABLE console_sessions" if not column else f"COLUMN console_sessions{column}"
        op.execute(f"COMMENT ON {target} IS '{text}'")

    # Opening a session also clears the expired ones (the table stays small).
    op.execute(
        """
        CREATE FUNCTION elephant_console_open(p_token_hash text, p_key_id uuid,
                                              p_ttl_seconds integer, p_client text)
        RETURNS timestamptz
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        DECLARE
            v_expires timestamptz;
        BEGIN
            IF p_ttl_seconds IS NULL OR p_ttl_seconds < 60 OR p_ttl_seconds > 2592000 THEN
                RAISE EXCEPTION 'session length must be 60..2592000 seconds, got %',
                      p_ttl_seconds USING ERRCODE = '22023';
            END IF;
            DELETE FROM console_sessions WHERE expires_at <= now();
            INSERT INTO console_sessions (token_hash, key_id, expires_at, client)
            VALUES (p_token_hash, p_key_id, now() + make_interval(secs => p_ttl_seconds),
                    left(p_client, 100))
            RETURNING expires_at INTO v_expires;
            RETURN v_expires;
        END
        $$
        """
    )
    op.execute(
        """
        CREATE FUNCTION elephant_console_session(p_token_hash text)
        RETURNS TABLE (key_id uuid, prefix text, name text, tenant_id text, scopes text[],
                       key_expires_at timestamptz, revoked_at timestamptz,
                       expires_at timestamptz)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            SELECT k.id, k.prefix, k.name, k.tenant_id, k.scopes, k.expires_at, k.revoked_at,
                   s.expires_at
              FROM console_sessions AS s JOIN api_keys AS k ON k.id = s.key_id
             WHERE s.token_hash = p_token_hash AND s.expires_at > now()
        $$
        """
    )
    op.execute(
        """
        CREATE FUNCTION elephant_console_close(p_token_hash text)
        RETURNS void
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
            DELETE FROM console_sessions WHERE token_hash = p_token_hash
        $$
        """
    )
    for function, text in (
        (OPEN_FUNCTION, "Open a console session for a verified key; returns when it expires."),
        (SESSION_FUNCTION, "The key behind a live console session (none when expired)."),
        (CLOSE_FUNCTION, "Sign a console session out."),
    ):
        op.execute(f"REVOKE ALL ON FUNCTION {function} FROM PUBLIC")
        op.execute(f"GRANT EXECUTE ON FUNCTION {function} TO {app}")
        op.execute(f"COMMENT ON FUNCTION {function} IS '{text} (migration 0011)'")

    op.execute("ALTER TABLE admission_log ADD COLUMN rejected_text text")
    for column in ("conversation_id uuid", "turn_start integer", "turn_end integer"):
        op.execute(f"ALTER TABLE admission_log ADD COLUMN {column}")
    op.execute(
        "CREATE INDEX admission_log_conversation ON admission_log (tenant_id, conversation_id) "
        "WHERE conversation_id IS NOT NULL"
    )
    for column, text in (
        ("conversation_id", "For a window: the conversation it was cut from (conversations.id)."),
        ("turn_start", "For a window: its first turn (turns.seq)."),
        ("turn_end", "For a window: its last turn (turns.seq, inclusive)."),
    ):
        op.execute(f"COMMENT ON COLUMN admission_log.{column} IS '{text}'")
    op.execute(
        "COMMENT ON COLUMN admission_log.rejected_text IS 'The whole text of a rejected note "
        "or window, so it can be admitted later (POST /amac/decisions/{id}/admit); NULL for "
        "other decisions, and cleared once admitted or erased.'"
    )
    op.execute("UPDATE elephant_meta SET schema_version = '0011_console', updated_at = now()")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS admission_log_conversation")
    for column in ("turn_end", "turn_start", "conversation_id", "rejected_text"):
        op.execute(f"ALTER TABLE admission_log DROP COLUMN IF EXISTS {column}")
    for function in (CLOSE_FUNCTION, SESSION_FUNCTION, OPEN_FUNCTION):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.execute("DROP TABLE IF EXISTS console_sessions")
    op.execute("UPDATE elephant_meta SET schema_version = '0010_lifecycle', updated_at = now()")
