"""Per-tenant settings kept in ``tenants.settings``: who the tenant's notes are by.

A note says "I live in Paris"; the fact extracted from it must say who lives there,
or contradiction checks (which compare facts of one subject) never see it. That "I"
is the note's own ``subject`` when it names one, else the tenant's owner (the user or
agent the memories belong to), else the setting ``tenant.owner``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.db.runtime import Connection
from app.services.common.inputs import Name
from app.services.runtime import Elephant

OWNER_KEY = "owner"


class OwnerIn(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    owner: Name | None = Field(
        ..., description='Who "I" and "my" in this tenant\'s notes are; null restores tenant.owner.'
    )


@dataclass(frozen=True, slots=True)
class Owner:
    """The owner in force, and whether the tenant set it or the settings default applies."""

    owner: str
    source: Literal["tenant", "settings"]


def tenant_owner(conn: Connection, elephant: Elephant, tenant: str) -> Owner:
    """The owner on a connection already inside the tenant (commit uses its own)."""
    row = conn.execute(
        "SELECT settings ->> %s FROM tenants WHERE id = %s", (OWNER_KEY, tenant)
    ).fetchone()
    if row is not None and row[0]:
        return Owner(str(row[0]), "tenant")
    return Owner(elephant.settings.tenant.owner, "settings")


def get_owner(elephant: Elephant, tenant: str) -> Owner:
    with elephant.db.tenant(tenant) as conn:
        return tenant_owner(conn, elephant, tenant)


def set_owner(elephant: Elephant, tenant: str, owner: str | None) -> Owner:
    """Set (or with None, clear) the tenant's owner; returns the one now in force.

    Only later commits use it: a stored note keeps the subject it was committed with."""
    with elephant.db.tenant(tenant) as conn:
        if owner is None:
            conn.execute(
                "UPDATE tenants SET settings = settings - %s WHERE id = %s", (OWNER_KEY, tenant)
            )
        else:
            conn.execute(
                "UPDATE tenants SET settings = settings || %s::jsonb WHERE id = %s",
                (json.dumps({OWNER_KEY: owner}), tenant),
            )
        return tenant_owner(conn, elephant, tenant)
