"""``elephant backup`` and ``elephant restore``: the whole database to one file and back.

Thin over app/services/ops/backup (docs/backup.md). Registered at the end of app/cli.py;
the services are imported when a command runs: ``elephant --help`` must not pay for them.
"""

from __future__ import annotations

from pathlib import Path

import click

from app.cli_support import command_settings, print_json


@click.command("backup")
@click.option(
    "--out",
    "out",
    metavar="FILE",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The backup file to write (new): pg_dump's archive, the roles and the row counts.",
)
def backup_command(out: Path) -> None:
    """Back up the whole database (every tenant, the graphs, the keys, the analysts' roles)
    into one file, in one snapshot; the server may keep serving meanwhile."""
    from app.services.ops.backup.make import backup

    report = backup(command_settings(), out)
    print_json(report)
    click.echo(
        f"backed up {report.database} ({report.tables} tables, {report.rows} rows, "
        f"{len(report.roles)} roles) to {report.path}: {report.bytes / 1e6:.1f} MB in "
        f"{report.seconds} s with the {report.tools}",
        err=True,
    )


@click.command("restore")
@click.argument(
    "path", metavar="FILE", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
def restore_command(path: Path) -> None:
    """Restore an `elephant backup` file into the configured database, which must be
    empty (a new data dir, embedded.database or DATABASE_URL): all or nothing. Exit 1 if
    a table's row count differs from the backup's or an index is invalid."""
    from app.services.ops.backup.restore import restore

    report = restore(command_settings(), path)
    print_json(report)
    click.echo(
        f"restored {report.tables} tables ({report.rows} rows) into {report.database} in "
        f"{report.seconds} s; roles created: {', '.join(report.roles_created) or 'none'}",
        err=True,
    )
    if not report.ok:
        raise click.ClickException(
            f"the restored database differs from the backup: rows {report.mismatched}, "
            f"invalid indexes {report.invalid_indexes}"
        )
