"""An export file up to ids and times: what a round trip (export -> import -> export) must
give back row for row (tests/integration/test_export.py, benchmarks/transfer_roundtrip.py).

Ids are what an import may change: uuids (with --new-ids) and the row numbers of
database-wide sequences (always). Each is replaced by a label in the order the file first
names it: a uuid, wherever it appears (a key, a foreign key, a job's payload), by
``uuid#n``; a row number by ``<table>#n``, in the table's own key and in every column
that points at it (a passage's turn). Two files that hold the same rows in the same order
then normalise to the same lines. Times the import sets itself (the export's time, the
tenant row's age) are dropped; every other time is kept as the file has it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.services.transfer.catalog import Catalog

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HEADER_DROPPED = ("exported_at", "tenant", "app_version")


@dataclass
class Normalised:
    """The file's lines up to ids and times, and the label of each id it named."""

    lines: list[Any]
    labels: dict[str, str] = field(default_factory=dict)  # uuid or "<table>:<n>" -> label

    def label(self, value: Any, table: str | None = None) -> str:
        """The label of a uuid (or of a row number of ``table``) this file named."""
        key = str(value) if table is None else f"{table}:{value}"
        return self.labels.get(key, f"unknown {key}")


def normalise(values: list[Any], tables: Catalog) -> Normalised:
    """``values``: the file's lines as parsed JSON (header first, end line last)."""
    numbered = {name: t.identity.name for name, t in tables.tables.items() if t.identity}
    pointing = {
        (name, ref.column): ref.table
        for name, table in tables.tables.items()
        for ref in table.references
        if ref.table in numbered and ref.target == numbered[ref.table]
    }
    out = Normalised([])
    counters: dict[str, int] = {}

    def labelled(key: str, space: str) -> str:
        if key not in out.labels:
            counters[space] = counters.get(space, 0) + 1
            out.labels[key] = f"{space}#{counters[space]}"
        return out.labels[key]

    def walk(value: Any) -> Any:
        if isinstance(value, str) and UUID.match(value):
            return labelled(value, "uuid")
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    for number, line in enumerate(values):
        if number == 0:
            out.lines.append({k: v for k, v in line.items() if k not in HEADER_DROPPED})
            continue
        if "row" not in line:
            out.lines.append(line)
            continue
        section, row = line["table"], dict(line["row"])
        if section == "tenants":
            row.pop("created_at", None)
        for column, value in list(row.items()):
            table = section if column == numbered.get(section) else pointing.get((section, column))
            if table is not None and value is not None:
                row[column] = labelled(f"{table}:{value}", table)
        out.lines.append({"table": section, "row": walk(row)})
    return out


def difference(a: Any, b: Any) -> Any:
    """What differs between two normalised lines: the row's fields that differ, as
    (left, right), or both lines when they are not rows of the same table."""
    if "row" in a and "row" in b and a["table"] == b["table"]:
        keys = sorted(set(a["row"]) | set(b["row"]))
        changed = {k: (a["row"].get(k), b["row"].get(k)) for k in keys}
        return {a["table"]: {k: v for k, v in changed.items() if v[0] != v[1]}}
    return (a, b)
