"""SQL analysts: LOGIN roles bound to tenants by a grant table, not by a setting.

Each test connects as the role it is about: an analyst of tenant A, the app role, the
migrator. Data of two tenants (memories, conversations, facts, graph) is written through
the services, then every table and view the analyst group may read is counted after
each ``SET`` an analyst could try.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.db import Database
from app.services.access import analysts, audit
from app.services.access.analysts import AnalystIn
from app.services.access.auth import secret_hash
from app.services.runtime import Elephant
from tests.conftest import api_client, operator_key

ROOT = Path(__file__).resolve().parents[2]
A, B = "ana-a", "ana-b"
CANARY_A, CANARY_B = "Alpha keeps the blue ledger", "Bravo moved to Lisbon in March"


@pytest.fixture(scope="module")
def seeded(elephant: Elephant) -> Elephant:
    with api_client(elephant.settings, elephant) as client:
        for tenant, text in ((A, CANARY_A), (B, CANARY_B)):
            headers = {"X-Elephant-Tenant": tenant}
            for body in (
                {"text": text, "subject": "ledger"},
                {"text": f"{text}. Maya works at Acme since 2021.", "source": "notes"},
            ):
                response = client.post("/commit", json=body, headers=headers)
                assert response.status_code in (200, 201), response.text
            turns = [
                {"speaker": "Maya", "text": f"{text}, you know."},
                {"speaker": "Assistant", "text": "Noted, I will remember that."},
            ]
            response = client.post(
                "/commit_conversation",
                json={"conversation_id": f"c-{tenant}", "turns": turns},
                headers=headers,
            )
            assert response.status_code in (200, 201, 202), response.text
            response = client.post(
                "/graph/entities",
                json={"entities": [{"name": f"Entity of {tenant}", "entity_type": "person"}]},
                headers=headers,
            )
            assert response.status_code in (200, 201), response.text
    return elephant


@pytest.fixture(scope="module")
def analyst_of_a(seeded: Elephant) -> Iterator[analysts.CreatedAnalyst]:
    created = analysts.create(seeded.db, AnalystIn(name="ana_one", tenants=[A]))
    yield created
    if any(a.name == "ana_one" for a in analysts.list_analysts(seeded.db)):
        analysts.revoke(seeded.db, "ana_one")


def connect_as(db: Database, role: str) -> psycopg.Connection:
    return psycopg.connect(analysts.login_conninfo(db, role), autocommit=True)


def readable_relations(db: Database, role: str) -> list[tuple[str, str]]:
    """(schema, relation) of every table and view the role may SELECT, graphs included."""
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'v') AND n.nspname NOT IN "
            "('pg_catalog', 'information_schema', 'ag_catalog') "
            "AND has_table_privilege(%s, c.oid, 'SELECT') ORDER BY 1, 2",
            (role,),
        ).fetchall()
    return [(schema, name) for schema, name in rows]


def tenant_column(conn: psycopg.Connection, schema: str, table: str) -> str | None:
    columns = {
        row[0]
        for row in conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s",
            (schema, table),
        )
    }
    if table == "tenants":
        return "id"
    return "tenant_id" if "tenant_id" in columns else None


def test_an_analyst_of_a_sees_no_row_of_b_whatever_it_sets(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    db = seeded.db
    relations = readable_relations(db, analyst_of_a.role)
    names = {name for _, name in relations}
    assert {"memories", "facts", "turns", "current_facts", "graph_entities"} <= names
    assert not {"api_keys", "audit_log", "console_sessions", "analysts"} & names
    with db.admin_connection() as conn:
        graph_of_b = conn.execute("SELECT elephant_graph_name(%s)", (B,)).fetchone()
    with connect_as(db, analyst_of_a.role) as conn:
        seen_a = 0
        for setting in (None, B, A, ""):
            if setting is not None:
                conn.execute("SELECT set_config('elephant.tenant_id', %s, false)", (setting,))
            for schema, table in relations:
                target = sql.Identifier(schema, table)
                column = tenant_column(conn, schema, table)
                if column is None:  # a graph table: all its rows are its tenant's
                    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(target))
                    count = row.fetchone()
                    assert graph_of_b is None or schema != graph_of_b[0] or count == (0,)
                    continue
                rows = conn.execute(
                    sql.SQL("SELECT {col}, count(*) FROM {t} GROUP BY 1").format(
                        col=sql.Identifier(column), t=target
                    )
                ).fetchall()
                tenants = {tenant for tenant, _ in rows}
                assert tenants <= {A}, (setting, schema, table, tenants)
                seen_a += sum(n for tenant, n in rows if tenant == A)
            names_seen = {r[0] for r in conn.execute("SELECT name FROM graph_entities")}
            assert f"Entity of {A}" in names_seen
            assert f"Entity of {B}" not in names_seen
        assert seen_a > 0
        texts = [r[0] for r in conn.execute("SELECT text FROM memories")]
        assert any(CANARY_A in t for t in texts)
        assert not any(CANARY_B in t for t in texts)


def test_an_analyst_is_read_only_with_a_statement_timeout(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("30s",)
        assert conn.execute("SHOW transaction_read_only").fetchone() == ("on",)
        conn.execute("SET default_transaction_read_only = off")
        # public.memories: no privilege at all; memories (its fenced view): not writable.
        for table in ("public.memories", "memories"):
            with pytest.raises(
                (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectNotInPrerequisiteState)
            ):
                conn.execute(
                    f"INSERT INTO {table} (tenant_id, kind, text, content_hash) "
                    "VALUES ('ana-a', 'note', 'x', 'h')"
                )
            with pytest.raises(
                (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectNotInPrerequisiteState)
            ):
                conn.execute(f"DELETE FROM {table}")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM api_keys")


def test_an_analyst_executes_no_key_session_job_or_erase_function(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    db = seeded.db
    with db.admin_connection() as conn:
        definers = conn.execute(
            "SELECT p.oid::regprocedure::text, has_function_privilege(%s, p.oid, 'EXECUTE') "
            "FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'public' AND p.prosecdef ORDER BY 1",
            (analyst_of_a.role,),
        ).fetchall()
    names = [name for name, _ in definers]
    for expected in ("elephant_verify_key", "elephant_console_sign_in", "elephant_claim_jobs"):
        assert any(name.startswith(expected + "(") for name in names), names
    assert [name for name, allowed in definers if allowed] == []
    with connect_as(db, analyst_of_a.role) as conn:
        for call in (
            "SELECT * FROM elephant_verify_key('abc', 'x', NULL)",
            "SELECT elephant_console_sign_in(repeat('a', 64), 'abc', 'x', 3600, NULL)",
            "SELECT * FROM elephant_claim_jobs('w', 1, 60)",
            "SELECT elephant_audit(NULL, NULL, 'x', '', 'ok', NULL, NULL)",
            "SELECT elephant_secure_graph('g', 'ana-b')",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(call)


def test_the_app_role_verifies_keys_but_reads_no_hash(seeded: Elephant) -> None:
    db = seeded.db
    key = operator_key(db, "verify-probe")
    prefix = key.split("_")[1]
    with db.connection() as conn:
        for gone in ("elephant_lookup_key('x')", "elephant_touch_key(gen_random_uuid(), NULL)"):
            with pytest.raises(psycopg.errors.UndefinedFunction):
                conn.execute(f"SELECT * FROM {gone}")
            conn.rollback()
        wrong = conn.execute(
            "SELECT * FROM elephant_verify_key(%s, %s, NULL)", (prefix, secret_hash("nope"))
        ).fetchall()
        right = conn.execute(
            "SELECT * FROM elephant_verify_key(%s, %s, NULL)", (prefix, secret_hash(key))
        )
        columns = [c.name for c in right.description or []]
        assert right.fetchall() and wrong == []
        assert "secret_hash" not in columns
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM api_keys")
        conn.rollback()


def test_a_console_session_cannot_be_minted_without_the_key(seeded: Elephant) -> None:
    db = seeded.db
    key = operator_key(db, "console-probe")
    prefix = key.split("_")[1]
    token_hash = secret_hash("a token the attacker chose")
    with db.connection() as conn:
        with pytest.raises(psycopg.errors.UndefinedFunction):
            conn.execute(
                "SELECT elephant_console_open(%s, gen_random_uuid(), 3600, NULL)", (token_hash,)
            )
        conn.rollback()
        forged = conn.execute(
            "SELECT elephant_console_sign_in(%s, %s, %s, 3600, 'sql')",
            (token_hash, prefix, secret_hash("not the key")),
        ).fetchone()
        conn.commit()
        assert forged == (None,)
        opened = conn.execute(
            "SELECT * FROM elephant_console_session(%s)", (token_hash,)
        ).fetchall()
        conn.rollback()
    assert opened == []
    entries = audit.entries(db, tenant=None, limit=50)
    assert any(
        e.action == "console.sign_in" and e.outcome == "denied" and e.key_prefix == prefix
        for e in entries
    )


def test_console_sign_in_is_audited(seeded: Elephant) -> None:
    from app.services.access import console_sessions

    db = seeded.db
    key = operator_key(db, "console-audit")
    session = console_sessions.sign_in(db, key, "203.0.113.9", 1.0)
    assert console_sessions.session_principal(db, session.token) is not None
    prefix = key.split("_")[1]
    entries = audit.entries(db, tenant=None, limit=50)
    assert any(
        e.action == "console.sign_in"
        and e.outcome == "ok"
        and e.key_prefix == prefix
        and e.client == "203.0.113.9"
        for e in entries
    )


def test_analysts_over_rest_stay_in_the_keys_tenant(seeded: Elephant) -> None:
    db = seeded.db
    with api_client(seeded.settings, seeded) as operator:
        created = operator.post(
            "/keys", json={"tenant": A, "scopes": ["read", "admin"], "name": "a-admin"}
        )
        assert created.status_code == 201, created.text
    tenant_key = created.json()["key"]
    with api_client(seeded.settings, seeded, key=tenant_key) as client:
        refused = client.post("/analysts", json={"name": "ana_rest", "tenants": [B]})
        assert refused.status_code == 403, refused.text
        bad = client.post("/analysts", json={"name": "Not A Name", "tenants": [A]})
        assert bad.status_code in (400, 422) and "name" in bad.text
        made = client.post("/analysts", json={"name": "ana_rest", "tenants": [A]})
        assert made.status_code == 201, made.text
        body = made.json()
        assert body["tenants"] == [A] and len(body["password"]) >= 24
        again = client.post("/analysts", json={"name": "ana_rest", "tenants": [A]})
        assert again.status_code == 409
        listed = client.get("/analysts").json()["items"]
        assert "ana_rest" in [a["name"] for a in listed]
        assert all(a["tenants"] == [A] and "password" not in a for a in listed)
        revoked = client.post("/analysts/ana_rest/revoke")
        assert revoked.status_code == 200, revoked.text
    with db.admin_connection() as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname = %s", (body["role"],)
        ).fetchone() == (0,)
    with pytest.raises(psycopg.OperationalError):
        connect_as(db, body["role"]).close()


def test_an_analyst_for_a_missing_tenant_is_refused_whole(seeded: Elephant) -> None:
    from app.errors import NotFound

    db = seeded.db
    with pytest.raises(NotFound, match="must exist"):
        analysts.create(db, AnalystIn(name="ana_ghost", tenants=[A, "no-such-tenant"]))
    with db.admin_connection() as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname = %s",
            (analysts.role_name(db.settings.database.app_role, "ana_ghost"),),
        ).fetchone() == (0,)
    assert [a.name for a in analysts.list_analysts(db) if a.name == "ana_ghost"] == []


def test_every_tenant_table_has_the_analyst_policies(db: Database) -> None:
    """A table added later with tenant_isolation must get the analyst policies too."""
    with db.admin_connection() as conn:
        rows = conn.execute(
            "SELECT tablename, array_agg(policyname::text ORDER BY policyname) FROM pg_policies "
            "WHERE schemaname = 'public' GROUP BY 1 HAVING 'tenant_isolation' = ANY "
            "(array_agg(policyname::text))"
        ).fetchall()
    missing = [t for t, p in rows if not {"analyst_read", "analyst_only"} <= set(p)]
    assert rows and missing == []


def test_the_cli_creates_an_analyst_and_opens_psql_as_it(seeded: Elephant) -> None:
    from click.testing import CliRunner

    from app.cli import main
    from tests.integration.test_cli import run

    settings = seeded.settings
    env = {
        "ELEPHANT_DATA_DIR": str(settings.data_dir),
        "ELEPHANT_EMBEDDED_DATABASE": settings.embedded.database,
    }

    def cli(*args: str) -> Any:
        return CliRunner().invoke(main, list(args), env=env)

    created = cli("analysts", "create", "ana_cli", "--tenant", A)
    assert created.exit_code == 0, created.output
    body = json.loads(created.output)
    assert body["tenants"] == [A] and body["password"] and body["note"]
    try:
        query = (
            "SET elephant.tenant_id = 'ana-b'; "
            "SELECT count(*) FILTER (WHERE tenant_id = 'ana-b'), "
            "count(*) FILTER (WHERE tenant_id = 'ana-a') FROM memories"
        )
        # psql writes to the process's own stdout: a real subprocess.
        result = run(["sql", "--analyst", "ana_cli", "-A", "-t", "-c", query], settings)
        assert result.returncode == 0, result.stderr
        hidden, own = result.stdout.strip().splitlines()[-1].split("|")
        assert hidden == "0" and int(own) > 0
        url = cli("sql", "--analyst", "ana_cli", "--url")
        assert url.exit_code == 0 and f"user={body['role']}" in url.output
        assert body["password"] not in url.output
        listed = cli("analysts", "list", "--tenant", A)
        assert "ana_cli" in listed.output and body["password"] not in listed.output
    finally:
        revoked = cli("analysts", "revoke", "ana_cli")
    assert revoked.exit_code == 0, revoked.output
    gone = cli("sql", "--analyst", "ana_cli", "-c", "SELECT 1")
    assert gone.exit_code != 0 and "no analyst named" in gone.output


def test_the_documented_dashboard_query_runs_as_an_analyst(
    seeded: Elephant, analyst_of_a: analysts.CreatedAnalyst
) -> None:
    page = (ROOT / "docs" / "security.md").read_text()
    block = page.split("A dashboard query", 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    with connect_as(seeded.db, analyst_of_a.role) as conn:
        conn.execute("SET elephant.tenant_id = 'ana-b'")
        rows = conn.execute(block.strip().rstrip(";")).fetchall()
    assert rows and {row[1] for row in rows} == {A}
