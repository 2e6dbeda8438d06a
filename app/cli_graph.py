"""``elephant graph``: the knowledge graph from the shell (search, open, show, record,
migrate), printing JSON.

Thin over app/services/graph; registered on the ``elephant`` group at the end of
app/cli.py. Services are imported inside the commands, so ``elephant --help`` stays fast.
"""

from __future__ import annotations

from typing import Any

import click

from app.cli_support import command_settings, delegated, opened_runtime, print_json, tenant_option


@click.group()
def graph() -> None:
    """The knowledge graph from the shell (prints JSON)."""


@graph.command(name="search")
@click.argument("query")
@tenant_option()
@click.option("--domain", default=None, help="Only this subject domain.")
@click.option("--type", "entity_type", default=None, help="Only this entity type.")
@click.option("--limit", type=click.IntRange(1, 200), default=10, help="1-200 entities.")
def graph_search(
    query: str, tenant: str | None, domain: str | None, entity_type: str | None, limit: int
) -> None:
    """Entities by name, then by what their observations say (a running server answers)."""
    settings = command_settings()
    query_string = {"query": query, "domain": domain, "entity_type": entity_type, "limit": limit}
    answered = delegated(settings, "GET", "/graph/search", tenant, query=query_string)
    if answered is not None:
        print_json(answered[0])
        return
    from app.services.graph import reads

    with opened_runtime(settings) as (elephant, default):
        print_json(
            reads.search_nodes(
                elephant, tenant or default, query, domain=domain, entity_type=entity_type,
                limit=limit,
            ).to_dict()
        )  # fmt: skip


@graph.command(name="open")
@click.argument("names", nargs=-1, required=True)
@tenant_option()
def graph_open(names: tuple[str, ...], tenant: str | None) -> None:
    """Entities with their active observations and current relations."""
    from app.services.graph import reads

    with opened_runtime() as (elephant, default):
        print_json(reads.open_nodes(elephant, tenant or default, list(names)).to_dict())


@graph.command(name="show")
@tenant_option()
@click.option("--offset", type=click.IntRange(0), default=0, help="Entities to skip.")
@click.option("--limit", type=click.IntRange(1, 200), default=50, help="Entities per page.")
@click.option("--full", is_flag=True, help="Observations and relations, not just counts.")
def graph_show(tenant: str | None, offset: int, limit: int, full: bool) -> None:
    """One page of the graph in name order."""
    from app.services.graph import reads

    with opened_runtime() as (elephant, default):
        print_json(
            reads.read_graph(
                elephant, tenant or default, offset=offset, limit=limit, summary=not full
            ).to_dict()
        )


@graph.command(name="record")
@click.argument("path", type=click.File("r"))
@tenant_option()
def graph_record(path: Any, tenant: str | None) -> None:
    """Record {entities, relations, observations} from a JSON file ('-': stdin), all or nothing."""
    from app.services.graph import operations
    from app.services.graph.models import RecordIn

    request = RecordIn.model_validate_json(path.read())
    with opened_runtime() as (elephant, default):
        print_json(operations.record(elephant, tenant or default, request).to_dict())


@graph.command(name="migrate")
@click.option(
    "--to",
    "target",
    type=click.Choice(["relational", "age"]),
    required=True,
    help="The backend to copy into (from the other one).",
)
@tenant_option("Only this tenant (default: every tenant).")
def graph_migrate(target: str, tenant: str | None) -> None:
    """Copy the graph between Apache AGE and the relational tables (idempotent, a
    transaction per tenant); then set graph.backend to the target to use it."""
    from app.services.graph import transfer
    from app.services.graph.backend import Backend

    backend: Backend = "age" if target == "age" else "relational"
    with opened_runtime() as (elephant, _default):
        report = transfer.migrate_graph(elephant, backend, tenant)
    print_json(report)
    click.echo(
        f"copied {report.entities_copied} entities and {report.relations_copied} relations "
        f"from {report.source} into {report.target}; set graph.backend = {report.target} "
        "(ELEPHANT_GRAPH_BACKEND) to use it",
        err=True,
    )
