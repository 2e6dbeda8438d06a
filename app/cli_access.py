"""``elephant keys``, ``elephant audit`` and ``elephant erase``: who may use Elephant, what
was done, and removing what a tenant holds.

Thin over app/services/access; registered on the ``elephant`` group at the end of
app/cli.py. Keys and audit open the database alone (no models), so they start fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from app.cli_support import command_settings, opened_runtime, print_json, tenant_option
from app.errors import InvalidInput

if TYPE_CHECKING:
    from app.db import Database


@click.group()
def keys() -> None:
    """API keys for REST and MCP over HTTP (shown once, stored as a hash)."""


@contextmanager
def _database() -> Iterator[Database]:
    """The database alone (no models): key and audit commands start fast."""
    from app.db import Database

    db = Database(command_settings())
    try:
        db.open()
        yield db
    finally:
        db.close()


@keys.command("create")
@tenant_option("The tenant the key acts for.")
@click.option("--all-tenants", is_flag=True, help="An admin key that names a tenant per request.")
@click.option("--scopes", default="read,write", show_default=True, help="read, write, admin.")
@click.option("--name", default="", help="What the key is for.")
@click.option("--expires-in-days", type=float, default=None, help="Days until it expires.")
def keys_create(
    tenant: str | None,
    all_tenants: bool,
    scopes: str,
    name: str,
    expires_in_days: float | None,
) -> None:
    """Create a key and print it once (JSON); only its prefix and hash are stored."""
    from app.services.access import keys as key_service

    request = key_service.KeyIn.model_validate(
        {
            "tenant": tenant,
            "all_tenants": all_tenants,
            "scopes": key_service.parse_scopes(scopes),
            "name": name,
            "expires_in_days": expires_in_days,
        }
    )
    with _database() as db:
        print_json(key_service.create_key(db, request))


@keys.command("list")
@tenant_option("Only this tenant's keys.")
@click.option("--revoked", is_flag=True, help="Include revoked keys.")
def keys_list(tenant: str | None, revoked: bool) -> None:
    """Keys with their tenant, scopes, creation, last use, expiry (never the secret)."""
    from app.services.access import keys as key_service

    with _database() as db:
        found = key_service.list_keys(db, tenant=tenant, include_revoked=revoked)
        print_json(found)


@keys.command("revoke")
@click.argument("prefix")
def keys_revoke(prefix: str) -> None:
    """Revoke a key by its prefix (or the whole key); it stops working at once."""
    from app.services.access import keys as key_service

    with _database() as db:
        print_json(key_service.revoke_key(db, prefix, tenant=None))


@click.command("audit")
@tenant_option("Only this tenant's entries.")
@click.option("--limit", type=click.IntRange(1, 10000), default=50, help="Entries, newest first.")
def audit_command(tenant: str | None, limit: int) -> None:
    """The audit log: admin actions, keys, denied requests, erasures."""
    from app.services.access import audit

    with _database() as db:
        print_json(audit.entries(db, tenant=tenant, limit=limit))


@click.command("erase")
@tenant_option("Tenant (default: tenant.default; --all needs it).")
@click.option("--all", "whole", is_flag=True, help="The whole tenant: rows, graph, API keys.")
@click.option("--subject", default=None, help="A person or entity: everything naming them.")
@click.option("--alias", "aliases", multiple=True, help="Another name of the subject (repeat).")
@click.option("--conversation", default=None, help="A conversation: your id for it or its uuid.")
@click.option("--source", default=None, help="Every memory, fact, conversation of a source.")
@click.option("--memory", "memory_ids", multiple=True, help="A memory id (repeat).")
@click.option("--fact", "fact_ids", multiple=True, help="A fact id (repeat).")
@click.option("--dry-run", is_flag=True, help="Report what would be removed; remove nothing.")
@click.option("--yes", is_flag=True, help="Confirm erasing a whole tenant.")
def erase_command(
    tenant: str | None,
    whole: bool,
    subject: str | None,
    aliases: tuple[str, ...],
    conversation: str | None,
    source: str | None,
    memory_ids: tuple[str, ...],
    fact_ids: tuple[str, ...],
    dry_run: bool,
    yes: bool,
) -> None:
    """Erase a subject, conversation, source, rows or a whole tenant; prints the report."""
    from app.services.access.erasure import EraseIn, erase

    request = EraseIn.model_validate(
        {
            "tenant": whole,
            "subject": subject,
            "aliases": list(aliases),
            "conversation_id": conversation,
            "source": source,
            "memory_ids": list(memory_ids),
            "fact_ids": list(fact_ids),
            "dry_run": dry_run,
        }
    )
    if whole and tenant is None:
        raise InvalidInput("--all erases a whole tenant: name it with --tenant")
    if whole and not dry_run and not yes:
        raise InvalidInput(
            f"erasing tenant {tenant} removes all of it for good: add --yes "
            "(see what would go with --dry-run)"
        )
    with opened_runtime() as (elephant, default):
        print_json(erase(elephant, tenant or default, request))


@click.group()
def analysts() -> None:
    """SQL analysts: read-only Postgres logins bound to tenants (password shown once)."""


@analysts.command("create")
@click.argument("name")
@click.option(
    "--tenant", "tenants", multiple=True, required=True, help="A tenant it reads (repeat)."
)
@click.option(
    "--statement-timeout",
    type=click.IntRange(1, 3600),
    default=30,
    show_default=True,
    help="Longest statement in seconds.",
)
def analysts_create(name: str, tenants: tuple[str, ...], statement_timeout: int) -> None:
    """Create a read-only login role for NAME and print its password once (JSON), with the
    connection string for psql, Metabase or Grafana."""
    from app.services.access import analysts as analyst_service

    request = analyst_service.AnalystIn.model_validate(
        {"name": name, "tenants": list(tenants), "statement_timeout_seconds": statement_timeout}
    )
    with _database() as db:
        print_json(analyst_service.create(db, request))


@analysts.command("list")
@tenant_option("Only the analysts of this tenant alone.")
def analysts_list(tenant: str | None) -> None:
    """Analyst roles with the tenants each reads (never a password)."""
    from app.services.access import analysts as analyst_service

    with _database() as db:
        print_json(analyst_service.list_analysts(db, tenant=tenant))


@analysts.command("revoke")
@click.argument("name")
def analysts_revoke(name: str) -> None:
    """Drop an analyst's role: its sessions end and it cannot log in again."""
    from app.services.access import analysts as analyst_service

    with _database() as db:
        print_json(analyst_service.revoke(db, name))
