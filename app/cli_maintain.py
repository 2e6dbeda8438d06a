"""``elephant maintain``: run a maintenance kind now, for one tenant or all of them.

A thin layer over app/services/lifecycle (decay, dedup, backfill, retention, status),
app/services/ops/reembed/ (reembed) and app/db/tenant_indexes.py (tenant-indexes).
Services are imported inside the commands, so ``elephant --help`` stays fast.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import click

from app.cli_support import tenant_option

if TYPE_CHECKING:
    from app.services.runtime import Elephant

F = TypeVar("F", bound=Callable[..., Any])


def _echo(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


@contextmanager
def opened_runtime() -> Iterator[Elephant]:
    from app.cli_support import command_settings, open_command_runtime

    elephant: Elephant = open_command_runtime(command_settings())
    try:
        yield elephant
    finally:
        elephant.close()


def _targets(elephant: Elephant, tenant: str | None, every: bool) -> list[str]:
    from app.services.lifecycle.maintenance import tenants

    if every:
        return tenants(elephant)
    return [tenant or elephant.settings.tenant.default]


def _kind_options(func: F) -> F:
    func = click.option(
        "--dry-run", is_flag=True, help="Report what would change; change nothing."
    )(func)
    func = click.option("--all", "every", is_flag=True, help="Every tenant.")(func)
    return tenant_option()(func)


def _run(kind: str, tenant: str | None, every: bool, dry_run: bool) -> None:
    from app.services.lifecycle.run import run_now

    if every and tenant is not None:
        raise click.UsageError("give --tenant or --all, not both")
    with opened_runtime() as elephant:
        reports = [
            run_now(elephant, name, kind, dry_run=dry_run).as_dict()
            for name in _targets(elephant, tenant, every)
        ]
    _echo(reports[0] if len(reports) == 1 and not every else reports)


@click.group()
def maintain() -> None:
    """Maintenance jobs, now: decay, dedup, backfill, retention, reembed (the worker also
    runs the first four on maintenance.schedule)."""


@maintain.command()
@_kind_options
def decay(tenant: str | None, every: bool, dry_run: bool) -> None:
    """Mark memories and facts whose activation fell below lifecycle.dormant_below dormant
    (and wake those used since). Nothing is hidden or deleted."""
    _run("decay", tenant, every, dry_run)


@maintain.command()
@_kind_options
def dedup(tenant: str | None, every: bool, dry_run: bool) -> None:
    """Merge notes that carry the same information (never an update: "PIN 1234" and
    "PIN 5678" both stay), from where the last sweep stopped."""
    _run("dedup", tenant, every, dry_run)


@maintain.command()
@_kind_options
def backfill(tenant: str | None, every: bool, dry_run: bool) -> None:
    """Fill in missing vectors of memories and facts, and passages of turns and notes."""
    _run("backfill", tenant, every, dry_run)


@maintain.command()
@_kind_options
def retention(tenant: str | None, every: bool, dry_run: bool) -> None:
    """Erase what each source in lifecycle.retention keeps longer than its days (through
    the audited erasure path: facts, graph links and vectors go too)."""
    _run("retention", tenant, every, dry_run)


@maintain.command("tenant-indexes")
@click.option(
    "--no-build", is_flag=True, help="Count and record each tenant's way; build no index."
)
def tenant_indexes(no_build: bool) -> None:
    """Count each tenant's vector rows; give tenants over search.tenant_index_rows HNSW
    indexes of their own (CREATE INDEX CONCURRENTLY: writes go on), drop those of tenants
    that shrank or were erased. The worker does this every search.tenant_index_check_s."""
    from app.db.tenant_indexes import keep

    with opened_runtime() as elephant:
        report = keep(
            elephant.db.admin_connection,
            elephant.settings.search.tenant_index_rows,
            build=not no_build,
        )
    _echo({**dataclasses.asdict(report), "counts": report.counts()})


@maintain.command()
def status() -> None:
    """Per kind: its interval, last run, queued and running jobs, tenants it is due for."""
    from app.services.lifecycle.maintenance import state

    with opened_runtime() as elephant:
        _echo([dataclasses.asdict(kind) for kind in state(elephant)])


@maintain.command()
@click.option("--model", default=None, help="Start re-embedding to this embedding model.")
@click.option("--dimensions", type=int, default=None, help="Its dimension (default: its own).")
@click.option("--provider", type=click.Choice(["local", "ollama"]), default=None)
@click.option("--query-prefix", default=None, help="Prefix of queries for the new model.")
@click.option("--document-prefix", default=None, help="Prefix of documents for the new model.")
@click.option("--batch", type=click.IntRange(1, 10000), default=256, show_default=True)
@click.option("--status", "show", is_flag=True, help="Only print where the re-embed stands.")
@click.option("--cancel", is_flag=True, help="Abandon the re-embed in progress (before swap).")
def reembed(
    model: str | None,
    dimensions: int | None,
    provider: str | None,
    query_prefix: str | None,
    document_prefix: str | None,
    batch: int,
    show: bool,
    cancel: bool,
) -> None:
    """Re-embed every vector to a new model with no downtime (built beside the old ones,
    then swapped); without --model, resume the one in progress."""
    from app.services.ops import reembed as service

    with opened_runtime() as elephant:
        if show:
            current = service.status(elephant)
        elif cancel:
            current = service.cancel(elephant)
        else:
            if model is not None:
                service.start(
                    elephant,
                    model,
                    dimensions,
                    provider=cast(Literal["local", "ollama"] | None, provider),
                    query_prefix=query_prefix,
                    document_prefix=document_prefix,
                )

            def progress(now: service.ReembedStatus) -> None:
                click.echo(now.describe(), err=True)

            current = service.run(elephant, batch, progress=progress)
        click.echo(current.describe(), err=True)
        _echo(dataclasses.asdict(current))
