"""The ``elephant`` command: a thin layer over app.services and app.db.

Start-up matters here (``elephant --help`` under a second): this module imports only
click, pydantic and the settings; each command imports what it needs, and nothing
imports torch unless it embeds in-process (app/providers/embedder.py loads lazily).
Commands that embed ask a running ``elephant serve`` first (app/services/ops/server_link.py).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import ValidationError

from app import __version__
from app.cli_support import command_settings, opened_runtime, print_json
from app.config import Settings, load_settings, redacted, reference_markdown
from app.errors import ElephantError, InvalidInput

if TYPE_CHECKING:
    from app.db import Database
    from app.services.ops.server_link import QueryParams

F = TypeVar("F", bound=Callable[..., Any])
# Seconds uvicorn waits for open requests at SIGTERM; with the worker's 1.5 s and the
# server's fast stop, shutdown stays within about 5 s.
SHUTDOWN_GRACE_S = 1


class ElephantGroup(click.Group):
    """The ``elephant`` group: what a command refuses ends it with a message, not a traceback.

    click itself rejects what it can check (an option's type or range: a usage error, exit
    2). What the request models and services refuse (a pydantic ValidationError, worded
    as by the API and MCP; any ElephantError) prints ``Error: <message>`` on stderr and
    exits 1. One place for every command, the nested groups' included: they run inside
    this invoke.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as exc:
            raise click.ClickException(InvalidInput.from_validation(exc).message) from None
        except ElephantError as exc:
            raise click.ClickException(exc.message) from None


def tenant_option(meaning: str = "Tenant (default: tenant.default).") -> Callable[[F], F]:
    """``--tenant TENANT``, one spelling on every command; ``meaning`` is its help there
    (the tenant a command acts for, a filter, the tenant a new key serves)."""
    return click.option("--tenant", metavar="TENANT", default=None, help=meaning)


def _exit_on_sigterm() -> None:
    """SIGTERM ends the process through SystemExit, so atexit stops the embedded server."""

    def handler(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


@click.group(cls=ElephantGroup)
@click.version_option(__version__, prog_name="elephant")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Show start-up lines: the embedded server adopted, migrations, where a search ran.",
)
def main(verbose: int) -> None:
    """Elephant: Postgres-native long-term memory for AI agents."""
    _exit_on_sigterm()


@main.command()
def version() -> None:
    """Print the version."""
    click.echo(f"elephant {__version__}")


_AUTH_OPTION = click.option(
    "--auth",
    type=click.Choice(["keys", "local"]),
    default=None,
    help="keys: API keys required; local: no keys, loopback only (default: auth.mode).",
)


def _with_auth_mode(settings: Settings, mode: str | None) -> Settings:
    if mode is None:
        return settings
    return settings.model_copy(update={"auth": settings.auth.model_copy(update={"mode": mode})})


def _announce_auth(settings: Settings) -> None:
    """A log line (in the log's format: JSON when log.format is json), not a bare echo."""
    log = logging.getLogger("app.cli")
    if settings.auth.mode == "local":
        log.info("auth: local mode, no API keys (loopback only)")
    else:
        log.info(
            "auth: API keys required (create one: elephant keys create --tenant T "
            "--scopes read,write)"
        )


@main.command()
@click.option("--host", default=None, help="Bind address (default: server.host).")
@click.option("--port", type=int, default=None, help="Port (default: server.port).")
@_AUTH_OPTION
def serve(host: str | None, port: int | None, auth: str | None) -> None:
    """Run the HTTP API (on the embedded Postgres unless DATABASE_URL is set)."""
    import uvicorn

    from app.api import create_app
    from app.services.access.auth import check_bind
    from app.services.jobs.worker import start_worker
    from app.services.ops import server_link
    from app.services.runtime import Elephant

    settings = _with_auth_mode(command_settings(serving=True), auth)
    bind = host or settings.server.host
    served_port = port or settings.server.port
    check_bind(settings, bind, where="elephant serve")
    # Open here, failing with our message, rather than inside the ASGI lifespan.
    elephant = Elephant.open(settings)
    code = 0
    link = None
    try:
        if settings.worker.enabled:
            start_worker(elephant)
        _warm_up(elephant)
        # The local CLI's way in: it borrows this server's model (server_link.py).
        link = server_link.publish(settings, bind, served_port)
        _announce_auth(settings)
        if settings.console.enabled:
            shown = f"[{bind}]" if ":" in bind else bind
            logging.getLogger("app.cli").info("web console: http://%s:%d/ui", shown, served_port)
        uvicorn.run(
            create_app(settings, elephant, bind=bind, link_token=link.token if link else None),
            host=bind,
            port=served_port,
            log_level=settings.log.level.lower(),
            log_config=None,  # our handler and format (app.logs), not uvicorn's
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    except SystemExit as exc:  # SIGTERM, re-raised by uvicorn once it has shut down
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        if link is not None:
            server_link.withdraw(settings, link)
        elephant.close()
    _exit_now(code)


def _warm_up(elephant: Any) -> None:
    """Start loading a local embedding model in the background: the server takes requests
    at once, and only its first embedding waits for the model. A long-running process
    also follows the database's model through a re-embed (app/services/ops/reembed/)."""
    from app.services.ops import reembed

    reembed.follow(elephant)
    warm_up = getattr(elephant.embedder, "warm_up", None)
    if callable(warm_up):
        warm_up()


def _exit_now(code: int) -> None:
    """Everything is closed and the database stopped: skip the interpreter's teardown of
    torch and friends (about 3 s), so SIGTERM ends the server within the 5 s budget."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@main.command(name="mcp")
@click.option("--http", "use_http", is_flag=True, help="Streamable HTTP instead of stdio.")
@click.option("--host", default=None, help="HTTP bind address (default: mcp.host).")
@click.option("--port", type=int, default=None, help="HTTP port (default: mcp.port).")
@click.option(
    "--profile",
    type=click.Choice(["recall", "record", "standard", "full"]),
    default=None,
    help="Tools offered (default: mcp.profile).",
)
@_AUTH_OPTION
def mcp_command(
    use_http: bool, host: str | None, port: int | None, profile: str | None, auth: str | None
) -> None:
    """Run the MCP server: stdio (`claude mcp add elephant -- elephant mcp`) or --http.

    Over stdio, initialize is answered at once; the tools, the database and then the
    embedding model load in the background after it (app/mcp/server.py)."""
    settings = _with_auth_mode(command_settings(serving=True), auth)
    if profile is not None:
        settings = settings.model_copy(
            update={"mcp": settings.mcp.model_copy(update={"profile": profile})}
        )
    if not use_http:
        from app.mcp.server import stdio_server

        # stdout is the protocol: the transport points fd 1 at stderr while it serves, and
        # nothing is opened before it does.
        server, startup = stdio_server(settings)
        try:
            server.run(transport="stdio", show_banner=False)
        finally:
            startup.close()
        _exit_now(0)

    import uvicorn

    from app.mcp.http import build_http_server, http_app
    from app.services.access.auth import check_bind
    from app.services.jobs.worker import start_worker
    from app.services.runtime import Elephant

    bind = host or settings.mcp.host
    check_bind(settings, bind, where="elephant mcp --http")
    elephant = Elephant.open(settings)
    try:
        if settings.worker.enabled:
            start_worker(elephant)
        _warm_up(elephant)
        uvicorn.run(
            http_app(build_http_server(settings, lambda: elephant), path="/mcp"),
            host=bind,
            port=port or settings.mcp.port,
            log_level=settings.log.level.lower(),
            log_config=None,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    finally:
        elephant.close()


@main.command()
@click.option("--once", is_flag=True, help="Run the jobs that are due, then exit.")
def worker(once: bool) -> None:
    """Drain the fact-extraction queue (all tenants) until stopped."""
    from app.services.jobs.runner import drain
    from app.services.jobs.worker import start_worker
    from app.services.runtime import Elephant

    settings = command_settings(serving=True)
    elephant = Elephant.open(settings)
    try:
        if once:
            click.echo(f"ran {drain(elephant)} jobs")
            return
        start_worker(elephant)
        _warm_up(elephant)
        click.echo("worker running; Ctrl-C to stop")
        signal.pause()
    finally:
        elephant.close()


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@tenant_option("Tenant to ingest into (default: tenant.default).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "jsonl", "locomo"]),
    default="auto",
    help="JSONL of notes/conversations, or a LoCoMo JSON file.",
)
@click.option("--split-tenants", is_flag=True, help="LoCoMo: one tenant per sample.")
@click.option("--no-extract", is_flag=True, help="Leave fact extraction to a worker.")
def ingest(path: Path, tenant: str | None, fmt: str, split_tenants: bool, no_extract: bool) -> None:
    """Ingest a file through the write path (gate, dedup, windows, facts)."""
    from app.services.jobs.runner import drain
    from app.services.memory import ingest as ingest_service
    from app.services.runtime import Elephant

    settings = command_settings()
    items = ingest_service.read_items(path, tenant or settings.tenant.default, fmt, split_tenants)
    elephant = Elephant.open(settings)
    try:
        with click.progressbar(length=len(items), label="committing", file=sys.stderr) as bar:
            report = ingest_service.ingest(elephant, items, on_item=lambda _: bar.update(1))
        ran = 0 if no_extract else drain(elephant)
        click.echo(json.dumps({**report.__dict__, "jobs_run": ran}, indent=2))
    finally:
        elephant.close()


@main.command()
@click.argument("target", default="head")
@click.option("--down", is_flag=True, help="Downgrade to TARGET (e.g. base) instead.")
@click.option("--status", is_flag=True, help="Only print the current and head revisions.")
def migrate(target: str, down: bool, status: bool) -> None:
    """Upgrade the schema to TARGET (default head), or downgrade with --down."""
    from app.db import Database

    settings = command_settings()
    db = Database(settings)
    try:
        db.start_server()
        if not status:
            if down:
                db.downgrade("base" if target == "head" else target)
            else:
                db.migrate(target)
        info = db.schema_info()
        click.echo(f"schema revision: {info.revision or 'base'} (head: {info.head})")
    finally:
        db.close()


@main.command(context_settings={"ignore_unknown_options": True})
@click.option("-c", "--command", "command", default=None, help="Run one statement and exit.")
@tenant_option("Connect as the app role scoped to this tenant (row-level security applies).")
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def sql(command: str | None, tenant: str | None, psql_args: tuple[str, ...]) -> None:
    """Open psql on Elephant's database (the analysts' door in), or run -c SQL."""
    from app.db import Database
    from app.db.embedded import binaries_dir

    settings = command_settings()
    db = Database(settings)
    try:
        db.open()
        env = dict(os.environ)
        conninfo = db.admin_conninfo()
        if tenant is not None:
            # A psql session keeps its settings: never through a transaction pooler (which
            # also refuses startup options); there the direct URL with the app role.
            conninfo = db.session_conninfo()
            options = f"-c elephant.tenant_id={tenant}"
            if db.embedded is None or db.pooled:
                options += f" -c role={settings.database.app_role}"
            env["PGOPTIONS"] = options
        args = [str(binaries_dir() / "psql"), "-X", "--dbname", conninfo, *psql_args]
        if command is not None:
            args += ["-v", "ON_ERROR_STOP=1", "-c", command]
        code = subprocess.call(args, env=env)
    finally:
        db.close()
    sys.exit(code)


@main.command(name="search")
@click.argument("query")
@tenant_option()
@click.option("--limit", type=click.IntRange(1, 200), default=None, help="1-200 results.")
@click.option("--explain", is_flag=True, help="Add timings and lane ranks.")
def search_command(query: str, tenant: str | None, limit: int | None, explain: bool) -> None:
    """Hybrid search from the shell; prints JSON. A running `elephant serve` on this
    database answers it with its loaded model; otherwise it runs here."""
    settings = command_settings()
    body: dict[str, Any] = {"query": query, "explain": explain}
    if limit is not None:
        body["limit"] = limit
    answered = _delegated(settings, "POST", "/search", tenant, body=body)
    if answered is not None:
        print_json(answered[0])
        return
    from app.services.retrieval.schemas import SearchRequest
    from app.services.retrieval.search import search

    request = SearchRequest(query=query, limit=limit, explain=explain)  # refused before opening
    with opened_runtime(settings) as (elephant, default):
        print_json(search(elephant, tenant or default, request).response())


def _delegated(
    settings: Settings,
    method: str,
    path: str,
    tenant: str | None,
    *,
    body: Any = None,
    query: QueryParams | None = None,
) -> tuple[Any] | None:
    """The running server's answer (a 1-tuple), or None: no server for this database."""
    from app.services.ops import server_link

    return server_link.delegate(
        settings, method, path, tenant=tenant or settings.tenant.default, body=body, query=query
    )


@main.command()
def doctor() -> None:
    """Check everything an operator would check by hand; exit 1 when a check fails."""
    from app.services.ops.doctor import diagnose

    with opened_runtime() as (elephant, _default):
        report = diagnose(elephant)
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
    for check in report.checks:
        click.echo(f"{marks[check.level]}  {check.name}: {check.detail}")
    click.echo(f"status: {report.status}")
    if report.status == "fail":
        raise SystemExit(1)


@main.group()
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
    answered = _delegated(settings, "GET", "/graph/search", tenant, query=query_string)
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


@main.group()
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


@main.command("audit")
@tenant_option("Only this tenant's entries.")
@click.option("--limit", type=click.IntRange(1, 10000), default=50, help="Entries, newest first.")
def audit_command(tenant: str | None, limit: int) -> None:
    """The audit log: admin actions, keys, denied requests, erasures."""
    from app.services.access import audit

    with _database() as db:
        print_json(audit.entries(db, tenant=tenant, limit=limit))


@main.command("erase")
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


@main.group()
def config() -> None:
    """Inspect the configuration."""


@config.command("show")
def config_show() -> None:
    """Print the effective settings (secrets hidden) as JSON."""
    click.echo(json.dumps(redacted(load_settings()), indent=2, default=str))


@config.command("reference")
def config_reference() -> None:
    """Print every key, its environment variable and default (the README table)."""
    click.echo(reference_markdown())


@main.group()
def embedded() -> None:
    """Manage the embedded Postgres server."""


@embedded.command("status")
def embedded_status() -> None:
    """Say whether the embedded server runs, and who holds it."""
    from app.db.embedded import EmbeddedPostgres

    settings = command_settings()
    server = EmbeddedPostgres(settings.data_dir / "embedded", port=settings.embedded.port)
    status = server.status()
    if status is None:
        click.echo(f"not running (data: {server.pgdata})")
        return
    click.echo(
        f"running pid {status.pid}, socket {status.socket_dir}, "
        f"holders {server.holders() or 'none'} (data: {server.pgdata})"
    )


@embedded.command("stop")
def embedded_stop() -> None:
    """Stop the embedded server even if other processes hold it."""
    from app.db.embedded import EmbeddedPostgres

    settings = command_settings()
    EmbeddedPostgres(settings.data_dir / "embedded", port=settings.embedded.port).stop()
    click.echo("stopped")


from app.cli_maintain import maintain  # noqa: E402  (registered last: it reads this module)

main.add_command(maintain)

from app.cli_transfer import export_command, import_command  # noqa: E402  (registered last)

main.add_command(export_command)
main.add_command(import_command)


if __name__ == "__main__":
    main()
