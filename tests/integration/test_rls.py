"""Row-level security: tenants cannot see or write each other's rows through the app role."""

from __future__ import annotations

import psycopg
import pytest

from app.db import Database
from app.errors import InvalidInput


def add_note(db: Database, tenant: str, text: str) -> None:
    with db.tenant(tenant) as conn:
        conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, content_hash) VALUES (%s, 'note', %s, md5(%s))",
            (tenant, text, text),
        )


def test_app_role_is_neither_superuser_nor_owner(db: Database) -> None:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT r.rolsuper, r.rolbypassrls, c.relowner = r.oid, c.relforcerowsecurity "
            "FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.relname = 'memories'"
        ).fetchone()
        conn.rollback()
    assert row == (False, False, False, True)


def test_a_row_of_tenant_a_is_invisible_to_tenant_b(db: Database) -> None:
    add_note(db, "tenant-a", "Alice's secret plan")
    with db.tenant("tenant-a") as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (1,)
    with db.tenant("tenant-b") as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM tenants").fetchone() == (1,)
        updated = conn.execute("UPDATE memories SET text = 'pwned'").rowcount
        deleted = conn.execute("DELETE FROM memories").rowcount
    assert (updated, deleted) == (0, 0)
    with db.tenant("tenant-a") as conn:
        assert conn.execute("SELECT text FROM memories").fetchone() == ("Alice's secret plan",)


def test_no_tenant_setting_sees_nothing(db: Database) -> None:
    add_note(db, "tenant-c", "visible only to c")
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
        conn.rollback()


def test_writing_into_another_tenant_is_refused_and_rolled_back(db: Database) -> None:
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        db.tenant("tenant-d") as conn,
    ):
        conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, content_hash) "
            "VALUES ('tenant-d', 'note', 'mine', 'h1')"
        )
        conn.execute(
            "INSERT INTO memories (tenant_id, kind, text, content_hash) "
            "VALUES ('tenant-a', 'note', 'smuggled', 'h2')"
        )
    with db.tenant("tenant-d") as conn:
        # the whole transaction is gone, including the row that was allowed
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)


def test_tenant_ids_are_validated(db: Database) -> None:
    with (
        pytest.raises(InvalidInput, match="tenant id"),
        db.tenant("Robert'); DROP TABLE memories;--"),
    ):
        pass


def test_app_role_cannot_change_the_schema(db: Database) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant("tenant-e") as conn:
        conn.execute("DROP TABLE memories")
