"""``elephant export`` and ``elephant import``: a tenant to a file and back, or to a vault.

Thin over app/services/transfer. Registered at the end of app/cli.py; like
app/cli_maintain.py it takes app.cli's helpers (settings, runtime, printing) when a
command runs, and the services too: ``elephant --help`` must not pay for them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

from app.cli_support import tenant_option
from app.errors import InvalidInput


@click.command("export")
@tenant_option()
@click.option(
    "--out",
    metavar="FILE",
    default="-",
    show_default=True,
    help="JSONL file to write ('-': stdout; a name ending in .gz is compressed).",
)
@click.option(
    "--vectors/--no-vectors",
    default=True,
    show_default=True,
    help="Include vectors; without them the import embeds again (smaller file, slower import).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "vault"]),
    default="jsonl",
    show_default=True,
    help="jsonl: every row, for `elephant import`. vault: Markdown for reading (Obsidian).",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="vault: the folder to write (new or empty).",
)
def export_command(
    tenant: str | None, out: str, vectors: bool, fmt: str, directory: Path | None
) -> None:
    """Export a tenant: every row, its graph and settings as JSON lines (one transaction's
    snapshot), or a Markdown vault with one file per entity and per conversation."""
    if fmt == "vault" and directory is None:
        raise InvalidInput("--format vault writes a folder: name it with --dir DIR")
    if fmt == "vault" and out != "-":
        raise InvalidInput("--out is for --format jsonl; a vault goes to --dir")
    if fmt == "jsonl" and directory is not None:
        raise InvalidInput("--dir is for --format vault; JSON lines go to --out FILE (or stdout)")
    from app.cli_support import opened_runtime
    from app.services.transfer import export, vault

    with opened_runtime() as (elephant, default):
        name = tenant or default
        if directory is not None:
            written = vault.export_vault(elephant, name, directory)
            click.echo(
                f"wrote {written.files} files for tenant {name} into {written.directory} "
                f"({written.entities} entities, {written.conversations} conversations, "
                f"{written.seconds} s)",
                err=True,
            )
            return
        if out == "-":
            report = export.export_tenant(elephant, name, sys.stdout, vectors=vectors)
        else:
            report = export.export_to_path(elephant, name, Path(out), vectors=vectors)
    rows = sum(report.counts.values())
    click.echo(
        f"exported tenant {name}: {rows} rows ({_counts(report.counts)}), "
        f"{report.bytes / 1e6:.1f} MB{' to ' + out if out != '-' else ''} in {report.seconds} s",
        err=True,
    )


@click.command("import")
@click.argument(
    "path",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
)
@tenant_option("Tenant to import into, which must be empty (default: the file's tenant).")
@click.option(
    "--new-ids",
    is_flag=True,
    help="New ids for memories, facts and conversations: to import beside the original "
    "in one database.",
)
def import_command(path: Path, tenant: str | None, new_ids: bool) -> None:
    """Import an `elephant export` file into an empty tenant: all or nothing. Vectors made
    by another embedding model (or left out) are made again."""
    from app.cli_support import opened_runtime, print_json
    from app.services.transfer import importer

    with _spooled(path) as readable, opened_runtime() as (elephant, _default):
        report = importer.import_tenant(elephant, readable, tenant, new_ids=new_ids)
    print_json(report)
    click.echo(
        f"imported {sum(report.rows.values())} rows and {report.graph_entities} graph entities "
        f"into tenant {report.tenant} in {report.seconds} s (vectors {report.vectors})",
        err=True,
    )


class _spooled:
    """'-' is read into a temporary file first: an import reads its file twice (a check,
    then the load), and stdin only once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.temporary: Path | None = None

    def __enter__(self) -> Path:
        if str(self.path) != "-":
            return self.path
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
            self.temporary = Path(handle.name)
        return self.temporary

    def __exit__(self, *_: object) -> None:
        if self.temporary is not None:
            self.temporary.unlink(missing_ok=True)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items() if count)
