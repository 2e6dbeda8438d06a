"""What every ``elephant`` command module shares: its settings (with logging set up),
the runtime it opens, the one ``--tenant`` option, the running server's answer and JSON
output. Kept apart from app/cli.py so command modules (app/cli_graph.py,
app/cli_access.py, app/cli_maintain.py, app/cli_transfer.py) use it without importing the
command group."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from app.config import Settings, load_settings
from app.logs import configure_logging

if TYPE_CHECKING:
    from app.services.ops.server_link import QueryParams

F = TypeVar("F", bound=Callable[..., Any])


def command_settings(*, serving: bool = False) -> Settings:
    """The settings, with logging set up by them (quiet start-up unless ``elephant -v``).

    Servers (serve, mcp, worker) log at log.level; a one-shot command prints its answer
    and only warnings and errors besides, unless -v."""
    settings = load_settings()
    context = click.get_current_context(silent=True)
    verbose = bool(context and context.find_root().params.get("verbose"))
    configure_logging(settings, verbose=verbose)
    if not serving and not verbose:
        root = logging.getLogger()
        root.setLevel(max(root.level, logging.WARNING))
    return settings


def tenant_option(meaning: str = "Tenant (default: tenant.default).") -> Callable[[F], F]:
    """``--tenant TENANT``, one spelling on every command; ``meaning`` is its help there
    (the tenant a command acts for, a filter, the tenant a new key serves)."""
    return click.option("--tenant", metavar="TENANT", default=None, help=meaning)


@contextmanager
def opened_runtime(settings: Settings | None = None) -> Iterator[tuple[Any, str]]:
    """The runtime and the default tenant, closed afterwards."""
    settings = settings or command_settings()
    elephant = open_command_runtime(settings)
    try:
        yield elephant, settings.tenant.default
    finally:
        elephant.close()


def open_command_runtime(settings: Settings) -> Any:
    """The runtime of a one-shot command: beside a running server it never rebuilds an index
    nor ends the server's sessions (``keyword_repairs="report"``, app/db/keyword_index.py)."""
    from app.services.runtime import Elephant

    return Elephant.open(settings, keyword_repairs="report")


def print_json(value: Any) -> None:
    """A result as JSON: a typed result (a dataclass or msgspec Struct) as the object of its
    fields, anything else JSON has no type for (a datetime, a uuid) as its str()."""
    click.echo(json.dumps(value, indent=2, default=json_default))


def json_default(value: Any) -> Any:
    """The API's JSON form (times in UTC with Z): one encoder for every output."""
    from app.services.common.jsonable import default

    return default(value)


def delegated(
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
