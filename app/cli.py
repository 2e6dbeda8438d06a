"""The ``elephant`` command: a thin layer over app.services and app.db.

Start-up matters here (``elephant --help`` under a second): this module imports only
click, pydantic and the settings; each command imports what it needs, and nothing
loads the embedding model (onnxruntime; torch only with embedding.runtime = torch, or to
export) unless it embeds in-process (app/providers/embedder.py loads lazily).
Commands that embed ask a running ``elephant serve`` first (app/services/ops/server_link.py).
The graph, access (keys, audit, erase), maintain and transfer commands live in
app/cli_graph.py, app/cli_access.py, app/cli_maintain.py and app/cli_transfer.py and are
registered on this group at the end.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import ValidationError

from app import __version__
from app.cli_support import (
    command_settings,
    delegated,
    open_command_runtime,
    opened_runtime,
    print_json,
    tenant_option,
)
from app.config import Settings, load_settings, redacted, reference_markdown
from app.errors import ElephantError, InvalidInput

if TYPE_CHECKING:
    pass

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
    from app.services.access.auth import check_bind

    settings = _with_auth_mode(command_settings(serving=True), auth)
    bind = host or settings.server.host
    served_port = port or settings.server.port
    check_bind(settings, bind, where="elephant serve")
    from app.services.ops import server_link

    # One server per data dir and port: a second one stops here, before loading anything,
    # and never touches the first one's files (its server.json, the database's holders).
    claimed = server_link.claim(settings, bind, served_port)
    # The model loads and the database opens in the background while the app is built.
    opening = _Opening(settings)
    try:
        import uvicorn

        from app.api import create_app
        from app.services.jobs.worker import start_worker

        # Opened here, failing with our message, rather than inside the ASGI lifespan.
        elephant = opening.wait()
    except BaseException:  # SIGTERM while starting: the database must not outlive us
        opening.close()
        raise
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
            access_log=False,  # the app's own, by route template (app/web/access_log.py)
            proxy_headers=False,  # the app reads auth.trusted_proxies (app/web/proxies.py)
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
    except SystemExit as exc:  # SIGTERM, re-raised by uvicorn once it has shut down
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        if link is not None:
            server_link.withdraw(settings, link)
        elephant.close()
        claimed.release()
    _exit_now(code)


class _Opening:
    """Loads the local embedding model and opens the runtime (the embedded Postgres
    started, the schema migrated and checked) in background threads from construction
    on, while the caller imports and builds its app."""

    def __init__(self, settings: Settings) -> None:
        import contextlib
        import threading

        from app.providers.embedder import build_embedder

        embedder: Any = None
        # A bad embedding setting: Elephant.open raises it again, after the database's checks.
        with contextlib.suppress(Exception):
            embedder = build_embedder(settings.embedding)
        warm_up = getattr(embedder, "warm_up", None)
        if callable(warm_up):
            warm_up()  # _warm_up asks again once the runtime is open: the model loads once
        self._outcome: dict[str, Any] = {}

        def open_runtime() -> None:
            try:
                self._outcome["elephant"] = _open_serving(settings, embedder)
            except Exception as exc:  # noqa: BLE001 - wait() raises it in the caller's thread
                self._outcome["error"] = exc

        self._thread = threading.Thread(target=open_runtime, name="elephant-open", daemon=True)
        self._thread.start()

    def wait(self) -> Any:
        """The opened Elephant, or the error opening it raised."""
        self._thread.join()
        if "elephant" not in self._outcome:
            raise self._outcome.get("error") or RuntimeError("opening the runtime failed")
        return self._outcome["elephant"]

    def close(self) -> None:
        """The caller gives up (SIGTERM while starting): close what was opened."""
        self._thread.join()
        opened = self._outcome.get("elephant")
        if opened is not None:
            opened.close()


def _open_serving(settings: Settings, embedder: Any = None) -> Any:
    """The runtime of a serving process: it repairs the BM25 indexes in the background,
    never on its start path (``keyword_repairs="background"``, app/db/keyword_index.py),
    and holds analysts to their limits (app/services/access/analyst_guard.py)."""
    from app.services.access.analyst_guard import start_guard
    from app.services.runtime import Elephant

    elephant = Elephant.open(settings, embedder=embedder, keyword_repairs="background")
    start_guard(elephant)
    return elephant


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
    the model runtime and friends (torch's took about 3 s), so SIGTERM ends the server
    within the 5 s budget."""
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

    from app.mcp.http import standalone_app
    from app.services.access.auth import check_bind
    from app.services.jobs.worker import start_worker

    bind = host or settings.mcp.host
    check_bind(settings, bind, where="elephant mcp --http")
    elephant = _open_serving(settings)
    try:
        if settings.worker.enabled:
            start_worker(elephant)
        _warm_up(elephant)
        uvicorn.run(
            standalone_app(settings, lambda: elephant, log_access=True),
            host=bind,
            port=port or settings.mcp.port,
            log_level=settings.log.level.lower(),
            log_config=None,
            access_log=False,  # AccessLog's lines, by route, instead of the path as sent
            proxy_headers=False,  # the app reads auth.trusted_proxies (app/web/proxies.py)
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

    settings = command_settings(serving=True)
    elephant = open_command_runtime(settings) if once else _open_serving(settings)
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

    settings = command_settings()
    items = ingest_service.read_items(path, tenant or settings.tenant.default, fmt, split_tenants)
    elephant = open_command_runtime(settings)
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
@click.option(
    "--analyst",
    default=None,
    metavar="NAME",
    help="Log in as this analyst (elephant analysts create): its tenants only, read-only.",
)
@click.option("--url", "print_url", is_flag=True, help="Print the connection string and exit.")
@tenant_option(
    "Operators: connect as the app role scoped to this tenant (a setting the session may "
    "change; analysts use --analyst)."
)
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def sql(
    command: str | None,
    analyst: str | None,
    print_url: bool,
    tenant: str | None,
    psql_args: tuple[str, ...],
) -> None:
    """Open psql on Elephant's database, or run -c SQL. Analysts: --analyst NAME (psql asks
    for the password unless PGPASSWORD is set; the embedded socket needs none)."""
    from app.db import Database
    from app.db.embedded import binaries_dir
    from app.services.access import analysts as analyst_service

    if analyst is not None and tenant is not None:
        raise InvalidInput(
            "give --analyst or --tenant, not both: an analyst's tenants are its grants"
        )
    settings = command_settings()
    db = Database(settings, keyword_repairs="report")
    try:
        db.open()
        env = dict(os.environ)
        conninfo = db.admin_conninfo()
        if analyst is not None:
            role = analyst_service.role_of(db, analyst)
            conninfo = analyst_service.login_conninfo(db, role)
            if print_url:
                click.echo(analyst_service.connection_string(db, role))
                return
        elif tenant is not None:
            # A psql session keeps its settings: never through a transaction pooler (which
            # also refuses startup options); there the direct URL with the app role.
            conninfo = db.session_conninfo()
            options = f"-c elephant.tenant_id={tenant}"
            if db.embedded is None or db.pooled:
                options += f" -c role={settings.database.app_role}"
            env["PGOPTIONS"] = options
        if print_url:
            raise InvalidInput("--url prints an analyst's connection string: add --analyst NAME")
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
    answered = delegated(settings, "POST", "/search", tenant, body=body)
    if answered is not None:
        print_json(answered[0])
        return
    from app.services.retrieval.schemas import SearchRequest
    from app.services.retrieval.search import search

    request = SearchRequest(query=query, limit=limit, explain=explain)  # refused before opening
    with opened_runtime(settings) as (elephant, default):
        print_json(search(elephant, tenant or default, request).response())


@main.command()
@click.option(
    "--database-only",
    is_flag=True,
    help="Check the database and configuration, not the API (no `elephant serve` needed).",
)
def doctor(database_only: bool) -> None:
    """Check everything an operator would check by hand; exit 1 when a check fails.

    First the API: the `elephant serve` of this data dir must answer /health (no server
    fails, unless --database-only); then the database, the model and the queues."""
    from app.services.ops.doctor import Check, check_api, diagnose, worst

    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}

    def echo(check: Check) -> None:
        click.echo(f"{marks[check.level]}  {check.name}: {check.detail}")

    settings = command_settings()
    api = None if database_only else check_api(settings)
    if api is not None:
        echo(api)  # before the database opens: doing so starts a stopped embedded server
    with opened_runtime(settings) as (elephant, _default):
        report = diagnose(elephant)
    for check in report.checks:
        echo(check)
    status = worst([report.status] + ([api.level] if api is not None else []))
    click.echo(f"status: {status}")
    if status == "fail":
        raise SystemExit(1)


@main.group()
def config() -> None:
    """Inspect the configuration."""


@config.command("show")
def config_show() -> None:
    """Print the effective settings (secrets hidden) as JSON."""
    click.echo(json.dumps(redacted(load_settings()), indent=2, default=str))


@config.command("reference")
def config_reference() -> None:
    """Every key, its environment variable and default (the table in docs/configuration.md)."""
    click.echo(reference_markdown())


@main.group()
def models() -> None:
    """The local embedding model's ONNX export (what embedding.runtime = onnx runs)."""


def _onnx_target(
    settings: Settings, to: Path | None, *, weights: bool
) -> tuple[str, Path | None, Path]:
    """(model, its weights' directory, the export's folder). ``weights`` False: an install
    without the model package may still show a folder it was given."""
    from app.errors import ConfigError
    from app.providers import onnx_export
    from app.providers.embedder import model_directory

    embedding = settings.embedding
    if embedding.provider != "local":
        raise click.UsageError(f"embedding.provider is {embedding.provider}: nothing to export")
    try:
        model_dir: Path | None = model_directory(embedding.model)
    except ConfigError:
        if weights:
            raise
        model_dir = None
    folder = to or onnx_export.folder_for(embedding.model, model_dir, embedding.onnx_dir)
    return embedding.model, model_dir, folder


@models.command("export")
@click.option("--force", is_flag=True, help="Export again even when a verified file is there.")
@click.option(
    "--to",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Into this folder (then set embedding.onnx_dir to it) instead of the default.",
)
def models_export(force: bool, to: Path | None) -> None:
    """Export embedding.model to ONNX once, from its local weights (needs the extra torch)."""
    from dataclasses import asdict

    from app.providers import onnx_export

    model, model_dir, folder = _onnx_target(command_settings(), to, weights=True)
    assert model_dir is not None
    manifest = onnx_export.export(model, model_dir, folder, force=force)
    click.echo(json.dumps({"folder": str(folder), **asdict(manifest)}, indent=2))


@models.command("show")
def models_show() -> None:
    """Where the ONNX export of embedding.model is, and whether it verifies; exit 1 if not."""
    from dataclasses import asdict

    from app.errors import ConfigError
    from app.providers import onnx_export

    model, model_dir, folder = _onnx_target(command_settings(), None, weights=False)
    try:
        manifest = onnx_export.verify(folder, model, model_dir)
    except ConfigError as exc:
        click.echo(json.dumps({"folder": str(folder), "verified": False, "problem": str(exc)}))
        raise SystemExit(1) from None
    click.echo(json.dumps({"folder": str(folder), "verified": True, **asdict(manifest)}, indent=2))


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


from app.cli_access import (  # noqa: E402  (registered last)
    analysts,
    audit_command,
    erase_command,
    keys,
)
from app.cli_graph import graph  # noqa: E402  (registered last)
from app.cli_maintain import maintain  # noqa: E402  (registered last: it reads this module)

main.add_command(graph)
main.add_command(keys)
main.add_command(analysts)
main.add_command(audit_command)
main.add_command(erase_command)
main.add_command(maintain)

from app.cli_transfer import export_command, import_command  # noqa: E402  (registered last)

main.add_command(export_command)
main.add_command(import_command)

from app.cli_backup import backup_command, restore_command  # noqa: E402  (registered last)

main.add_command(backup_command)
main.add_command(restore_command)


if __name__ == "__main__":
    main()
