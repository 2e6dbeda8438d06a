"""API key lifecycle: create (shown once), list, revoke. Run as the migrator role.

The app role cannot read or write `api_keys`; the CLI and the admin endpoints
manage keys through the migrator connection, and every change is audited.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.config import validate_tenant_id
from app.db.resources import load_sql
from app.db.runtime import Connection, Database
from app.errors import Forbidden, InvalidInput, NotFound
from app.protocol import JSONObject
from app.services.access import audit
from app.services.access.auth import SCOPES, Principal, Scope, secret_hash
from app.services.common import paging
from app.services.common.inputs import ShortText

PREFIX_BYTES = 6  # 12 hex characters: finds the key, says nothing about it
SECRET_BYTES = 32  # 256 bits


def _default_scopes() -> list[Scope]:
    return ["read", "write"]


class KeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str | None = Field(
        None, description="The tenant the key acts for. Omit only with all_tenants."
    )
    all_tenants: bool = Field(
        False, description="An admin key that names its tenant per request (operators)."
    )
    scopes: list[Scope] = Field(
        default_factory=lambda: _default_scopes(), min_length=1, description="read, write, admin."
    )
    name: ShortText = Field("", description="What the key is for.")
    expires_in_days: float | None = Field(
        None, gt=0, le=3650, description="Days until it stops working; none: never."
    )

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, value: str | None) -> str | None:
        return None if value is None else validate_tenant_id(value)

    @field_validator("name")
    @classmethod
    def _printable(cls, value: str) -> str:
        if any(ord(ch) < 32 for ch in value):
            raise ValueError("must not contain control characters")
        return value.strip()

    @model_validator(mode="after")
    def _reach(self) -> KeyIn:
        if self.all_tenants and self.tenant is not None:
            raise ValueError("give either tenant or all_tenants, not both")
        if not self.all_tenants and self.tenant is None:
            raise ValueError("name the tenant the key acts for (or all_tenants for an admin key)")
        if self.all_tenants and "admin" not in self.scopes:
            raise ValueError("only an admin key may act for all tenants: add the admin scope")
        self.scopes = [scope for scope in SCOPES if scope in self.scopes]
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyInfo:
    """What is known about a key: never its secret (only a hash of it is stored)."""

    prefix: str
    name: str
    tenant: str | None
    all_tenants: bool  # an admin key that names its tenant per request (tenant None)
    scopes: list[Scope]
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class KeyList:
    """A page of keys, oldest first: ``next_cursor`` continues (None: the last page);
    ``keys`` repeats ``items`` (its name before paging; deprecated); ``tenant`` is the
    tenant whose keys these are (None: every tenant's, all-tenant keys included)."""

    items: list[KeyInfo]
    next_cursor: str | None
    keys: list[KeyInfo]
    tenant: str | None


CREATED_NOTE = "store this key now: it is not shown again"


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatedKey(KeyInfo):
    """A new key: the only result that holds the secret (kept out of its repr)."""

    key: str = field(repr=False)
    note: str = CREATED_NOTE


def _info(row: tuple[Any, ...]) -> KeyInfo:
    """A row of sql/access/{create,list,revoke}_key(s).sql as a KeyInfo."""
    prefix, name, tenant, scopes, created_by, created_at, expires, used, revoked = row
    return KeyInfo(
        prefix=prefix,
        name=name,
        tenant=tenant,
        all_tenants=tenant is None,
        scopes=list(scopes),
        created_by=created_by,
        created_at=created_at,
        expires_at=expires,
        last_used_at=used,
        revoked_at=revoked,
    )


def _audit(
    conn: Connection,
    tenant: str | None,
    by: str,
    action: str,
    prefix: str,
    detail: JSONObject | None = None,
) -> None:
    """An audit row for a key's lifecycle; ``by`` "cli" is written as no key."""
    audit.write(
        conn,
        tenant=tenant,
        key_prefix=None if by == "cli" else by,
        action=action,
        target=prefix,
        detail=detail,
    )


def check_grant(creator: Principal, request: KeyIn) -> None:
    """A key may only hand out what it has, for the tenant it has it for."""
    if creator.tenant is not None and (request.all_tenants or request.tenant != creator.tenant):
        raise Forbidden("this API key may only create keys for its own tenant")
    missing = set(request.scopes) - creator.scopes
    if missing:
        raise Forbidden(f"a key cannot grant scopes it lacks: {', '.join(sorted(missing))}")


def create_key(db: Database, request: KeyIn, *, created_by: str = "cli") -> CreatedKey:
    prefix = secrets.token_hex(PREFIX_BYTES)
    key = f"ek_{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}"
    expires = (
        None
        if request.expires_in_days is None
        else datetime.now(UTC) + timedelta(days=request.expires_in_days)
    )
    with db.admin_connection() as conn, conn.transaction():
        row = conn.execute(
            load_sql("access/create_key.sql"),
            (prefix, secret_hash(key), request.name, request.tenant, request.scopes, created_by,
             expires),
        ).fetchone()  # fmt: skip
        assert row is not None
        info = _info(row)
        created = CreatedKey(**{f.name: getattr(info, f.name) for f in fields(info)}, key=key)
        detail = {"scopes": request.scopes, "all_tenants": request.all_tenants}
        _audit(conn, request.tenant, created_by, "key.create", prefix, detail)
    return created


def list_keys(
    db: Database,
    *,
    tenant: str | None,
    include_revoked: bool = False,
    limit: int | None = None,
    after: tuple[datetime, str] | None = None,
) -> list[KeyInfo]:
    """Keys of one tenant (tenant given), or every key (None); oldest first, only those
    after ``after`` (created_at, prefix) when given."""
    created, prefix = after if after is not None else (None, None)
    with db.admin_connection() as conn:
        rows = conn.execute(
            load_sql("access/list_keys.sql"),
            (tenant, tenant, include_revoked, created, created, prefix, limit),
        ).fetchall()
    return [_info(row) for row in rows]


KEYS_LISTING = "keys"


def key_page(
    db: Database,
    *,
    tenant: str | None,
    include_revoked: bool = False,
    limit: int = paging.MAX_LIMIT,
    cursor: str | None = None,
) -> KeyList:
    """One page of keys, after the cursor's key when there is one."""
    paging.check_limit(limit)
    after = None
    if cursor is not None:
        created, prefix = paging.decode(KEYS_LISTING, cursor, (datetime, str))
        after = (created, prefix)
    found = list_keys(
        db, tenant=tenant, include_revoked=include_revoked, limit=limit + 1, after=after
    )
    items = found[:limit]
    following = (
        paging.encode(KEYS_LISTING, (items[-1].created_at, items[-1].prefix))
        if len(found) > limit
        else None
    )
    return KeyList(items=items, next_cursor=following, keys=items, tenant=tenant)


def revoke_key(
    db: Database, prefix: str, *, tenant: str | None, revoked_by: str = "cli"
) -> KeyInfo:
    """Revoke by prefix (or the whole key); ``tenant`` limits it to that tenant's keys (an
    all-tenant key is no tenant's: only None reaches it)."""
    prefix = prefix.removeprefix("ek_").split("_", 1)[0].lower()
    with db.admin_connection() as conn, conn.transaction():
        row = conn.execute(load_sql("access/revoke_key.sql"), (prefix, tenant, tenant)).fetchone()
        if row is None:
            where = "" if tenant is None else f" in tenant {tenant!r}"
            raise NotFound(f"no API key with prefix {prefix!r}{where}")
        info = _info(row)
        _audit(conn, info.tenant, revoked_by, "key.revoke", prefix)
    return info


def delete_tenant_keys(conn: Connection, tenant: str) -> int:
    """Erasure of a tenant: its keys go too (the audit log keeps their prefixes)."""
    return conn.execute("DELETE FROM api_keys WHERE tenant_id = %s", (tenant,)).rowcount


def parse_scopes(text: str) -> list[Scope]:
    """'read,write' from the CLI, checked against the known scopes."""
    scopes = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if unknown or not scopes:
        raise InvalidInput(
            f"unknown scope(s) {', '.join(unknown) or '(none)'}: use read, write, admin"
        )
    return [scope for scope in SCOPES if scope in scopes]
