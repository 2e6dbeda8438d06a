"""A tenant as a Markdown vault, for reading (Obsidian, or any Markdown viewer).

```
DIR/index.md                       what is here, with a link to every file
DIR/Notes.md                       the notes, by date
DIR/Entities/<name>.md             one per graph entity: its relations as [[links]],
                                   its observations and the facts about it, with dates
DIR/Conversations/<date> <id>.md   one per conversation: its turns, speakers, dates
```

Each file opens with YAML front matter (values written as JSON strings, which YAML
reads as they are). File names come from entity names and conversation ids, so they
are made safe: no path separators, no leading dots (no ``..``, no hidden files), no
characters Windows or Obsidian links refuse, no NUL, at most 150 bytes; names that
then collide (case-insensitively, as macOS and Windows compare them) get " (2)",
" (3)". Every name is unique across the vault, so a ``[[link]]`` by name resolves to
exactly one file. One export is one snapshot (``export.snapshot``); the vault is
written file by file, never held whole in memory (the names are: one per entity).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, LiteralString

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.errors import ElephantError, InvalidInput
from app.services.graph.store import Entity, GraphStore, Relation
from app.services.graph.transfer import entity_pages
from app.services.runtime import Elephant
from app.services.transfer.export import FETCH, snapshot

ENTITIES = "Entities"
CONVERSATIONS = "Conversations"
INDEX = "index"
NOTES = "Notes"
MAX_STEM_BYTES = 150
_UNSAFE = re.compile(r'[\x00-\x1f\x7f"*/:<>?\\|#^\[\]]')
_WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT") for n in range(1, 10)}
)
_CONVERSATION_TURNS = load_sql("transfer/vault_conversations.sql")
_ENTITY_FACTS = load_sql("transfer/vault_entity_facts.sql")
_NOTES = load_sql("transfer/vault_notes.sql")


@dataclass(frozen=True, slots=True)
class VaultReport:
    tenant: str
    directory: str
    files: int
    entities: int
    conversations: int
    notes: int
    seconds: float


# ------------------------------------------------------------------ names


def safe_stem(name: str) -> str:
    """A file name (without .md) for ``name`` that cannot leave its folder or break a link."""
    stem = " ".join(_UNSAFE.sub("_", name).split()).strip(" .")
    stem = stem.encode()[:MAX_STEM_BYTES].decode("utf-8", "ignore").rstrip(" .")
    if not stem:
        return "untitled"
    if stem.split(".")[0].upper() in _WINDOWS_DEVICES:
        return f"_{stem}"
    return stem


class Names:
    """Unique file names across the vault, compared without case."""

    def __init__(self, reserved: Sequence[str] = (INDEX, NOTES)) -> None:
        self._used = {name.casefold() for name in reserved}

    def claim(self, name: str) -> str:
        base = stem = safe_stem(name)
        n = 2
        while stem.casefold() in self._used:
            stem = f"{base} ({n})"
            n += 1
        self._used.add(stem.casefold())
        return stem


def link(stem: str, shown: str) -> str:
    """An Obsidian wiki link to the file ``stem``, showing ``shown``."""
    text = " ".join(re.sub(r"[\[\]|]", " ", shown).split())
    return f"[[{stem}]]" if text == stem or not text else f"[[{stem}|{text}]]"


def _line(text: str) -> str:
    return _text(" ".join(str(text).split()))


def _text(text: str) -> str:
    """Stored text in a Markdown body: brackets escaped, so no text makes a link."""
    return str(text).replace("[", "\\[").replace("]", "\\]")


# ------------------------------------------------------------------ files


def _front_matter(fields: Mapping[str, object]) -> str:
    """YAML front matter; every value as JSON (strings quoted, lists inline), which YAML
    reads unchanged, so no name or text can break out of it."""
    lines = ["---"]
    for key, value in fields.items():
        if value is not None:
            lines.append(f"{key}: {_yaml(value)}")
    lines.append("---\n")
    return "\n".join(lines)


def _yaml(value: Any) -> str:
    """JSON, with brackets inside strings escaped (\\u005b): Obsidian reads a property
    holding [[...]] as a link."""
    if isinstance(value, list):
        return "[" + ", ".join(_yaml(item) for item in value) + "]"
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return json.dumps(text, ensure_ascii=False).replace("[", "\\u005b").replace("]", "\\u005d")


def _day(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat()
    return str(value)[:10]


def _span(valid_from: Any, valid_to: Any) -> str:
    if valid_from is None and valid_to is None:
        return ""
    if valid_to is None:
        return f"since {_day(valid_from)}"
    return f"{_day(valid_from) or '?'} → {_day(valid_to)}"


class _Vault:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = 0

    def open(self, folder: str | None, stem: str) -> IO[str]:
        where = self.root if folder is None else self.root / folder
        where.mkdir(exist_ok=True)
        path = where / f"{stem}.md"
        if path.resolve().parent != where.resolve():  # safe_stem makes this impossible
            raise ElephantError(f"refusing to write {path}: outside {where}")
        self.files += 1
        return open(path, "x", encoding="utf-8", newline="\n")


# ------------------------------------------------------------------ the export


def export_vault(elephant: Elephant, tenant: str, directory: Path) -> VaultReport:
    started = time.perf_counter()
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise InvalidInput(f"{directory} is not an empty folder: name a new or empty one")
    store = elephant.graph if elephant.graph_decision.backend is not None else None
    names = Names()
    with snapshot(elephant.db, tenant) as conn:
        directory.mkdir(parents=True, exist_ok=True)
        vault = _Vault(directory)
        conversations = _conversations(conn, tenant, vault, names)
        entities = {} if store is None else _entity_names(conn, store, tenant, names)
        if store is not None:
            _entities(conn, store, tenant, vault, entities, conversations)
        notes = _notes(conn, tenant, vault)
        _index(vault, tenant, entities, conversations, notes)
    return VaultReport(
        tenant=tenant,
        directory=str(directory),
        files=vault.files,
        entities=len(entities),
        conversations=len(conversations),
        notes=notes,
        seconds=round(time.perf_counter() - started, 3),
    )


def _conversations(
    conn: Connection, tenant: str, vault: _Vault, names: Names
) -> dict[str, tuple[str, str]]:
    """One file per conversation, its turns streamed in; conversation id -> (file, title)."""
    written: dict[str, tuple[str, str]] = {}
    handle: IO[str] | None = None
    current = None
    try:
        for row in _stream(conn, _CONVERSATION_TURNS, (tenant,)):
            conv_id, external_id, source, session_date, created, seq, speaker, text, when = row
            if conv_id != current:
                if handle is not None:
                    handle.close()
                current = conv_id
                title = external_id or str(conv_id)[:8]
                stem = names.claim(f"{_day(session_date or created)} {title}")
                written[str(conv_id)] = (stem, title)
                handle = vault.open(CONVERSATIONS, stem)
                handle.write(
                    _front_matter(
                        {
                            "type": "conversation",
                            "id": str(conv_id),
                            "external_id": external_id,
                            "source": source,
                            "session_date": session_date,
                            "tags": ["elephant/conversation"],
                        }
                    )
                )
                handle.write(f"\n# {_line(title)}\n\n")
            if handle is not None and seq is not None:
                stamp = f" · {when.isoformat(sep=' ', timespec='minutes')}" if when else ""
                handle.write(f"**{_line(speaker)}**{stamp}\n{_text(str(text).strip())}\n\n")
    finally:
        if handle is not None:
            handle.close()
    return written


def _entity_names(
    conn: Connection, store: GraphStore, tenant: str, names: Names
) -> dict[str, tuple[str, str]]:
    """Every entity's file name, before any entity file is written: links go both ways."""
    return {
        entity.key: (names.claim(entity.name), entity.name)
        for page in entity_pages(store, conn, tenant)
        for entity in page
    }


def _entities(
    conn: Connection,
    store: GraphStore,
    tenant: str,
    vault: _Vault,
    stems: dict[str, tuple[str, str]],
    conversations: dict[str, tuple[str, str]],
) -> None:
    for page in entity_pages(store, conn, tenant):
        keys = [entity.key for entity in page]
        relations = store.relations(conn, tenant, keys, active_only=False)
        facts: dict[str, list[tuple[Any, ...]]] = {}
        for row in conn.execute(_ENTITY_FACTS, (tenant, keys)).fetchall():
            facts.setdefault(str(row[0]), []).append(row[1:])
        for entity in page:
            with vault.open(ENTITIES, stems[entity.key][0]) as handle:
                _entity_file(handle, entity, relations, facts.get(entity.key, []), stems,
                             conversations)  # fmt: skip


def _entity_file(
    handle: IO[str],
    entity: Entity,
    relations: list[Relation],
    facts: list[tuple[Any, ...]],
    stems: dict[str, tuple[str, str]],
    conversations: dict[str, tuple[str, str]],
) -> None:
    stem = stems[entity.key][0]
    handle.write(
        _front_matter(
            {
                "type": "entity",
                "name": entity.name,
                "key": entity.key,
                "role": entity.role,
                "domain": entity.domain,
                "epistemic": entity.epistemic,
                "valid_from": entity.valid_from,
                "valid_to": entity.valid_to,
                "created_at": entity.created_at,
                "updated_at": entity.updated_at,
                "aliases": [entity.name] if stem != entity.name else None,
                "tags": ["elephant/entity", f"elephant/{safe_stem(entity.role).replace(' ', '_')}"],
            }
        )
    )
    handle.write(f"\n# {_line(entity.name)}\n")

    def to(key: str) -> str:
        found = stems.get(key)
        return link(*found) if found else _line(key)

    outgoing = [r for r in relations if r.source == entity.key]
    incoming = [r for r in relations if r.target == entity.key and r.source != entity.key]
    if outgoing:
        handle.write("\n## Relations\n\n")
        for r in outgoing:
            handle.write(f"- {_relation(r, r.relation_type, to(r.target))}\n")
    if incoming:
        handle.write("\n## Referenced by\n\n")
        for r in incoming:
            handle.write(f"- {_relation(r, f'{to(r.source)} {r.relation_type}', '')}\n")
    observations = [f for f in facts if f[2] is not None]
    others = [f for f in facts if f[2] is None]
    for title, rows in (("Observations", observations), ("Facts", others)):
        if rows:
            handle.write(f"\n## {title}\n\n")
            for row in rows:
                handle.write(f"- {_fact(row, conversations)}\n")


def _relation(relation: Relation, what: str, target: str) -> str:
    props = relation.properties
    span = _span(props.get("valid_from"), props.get("valid_to"))
    text = f"{what} {target}".strip()
    if not relation.active:
        text = f"~~{text}~~"
    return f"{text} ({span})" if span else text


def _fact(row: tuple[Any, ...], conversations: dict[str, tuple[str, str]]) -> str:
    link_kind, text, kind, status, valid_from, valid_to, recorded, expired, conv_id = row
    details = [kind or link_kind]
    span = _span(valid_from, valid_to)
    if span:
        details.append(f"valid {span}")
    details.append(f"recorded {_day(recorded)}")
    if status != "active" or expired is not None:
        details.append(status if status != "active" else f"expired {_day(expired)}")
    source = conversations.get(str(conv_id)) if conv_id is not None else None
    if source is not None:
        details.append(f"from {link(*source)}")
    body = _line(text)
    if status != "active" or expired is not None:
        body = f"~~{body}~~"
    return f"{body} ({'; '.join(details)})"


def _notes(conn: Connection, tenant: str, vault: _Vault) -> int:
    count = 0
    day = None
    with vault.open(None, NOTES) as handle:
        handle.write(_front_matter({"type": "notes", "tags": ["elephant/notes"]}))
        handle.write("\n# Notes\n")
        for text, source, at in _stream(conn, _NOTES, (tenant,)):
            if _day(at) != day:
                day = _day(at)
                handle.write(f"\n## {day}\n\n")
            handle.write(f"- {_line(text)} _({_line(source)})_\n")
            count += 1
    return count


def _index(
    vault: _Vault,
    tenant: str,
    entities: dict[str, tuple[str, str]],
    conversations: dict[str, tuple[str, str]],
    notes: int,
) -> None:
    with vault.open(None, INDEX) as handle:
        handle.write(
            _front_matter(
                {
                    "type": "index",
                    "tenant": tenant,
                    "exported_at": datetime.now().astimezone(),
                    "entities": len(entities),
                    "conversations": len(conversations),
                    "notes": notes,
                }
            )
        )
        handle.write(f"\n# Memory of {tenant}\n\n{link(NOTES, NOTES)}: {notes} notes\n")
        handle.write(f"\n## Entities ({len(entities)})\n\n")
        for stem, name in sorted(entities.values(), key=lambda pair: pair[1].casefold()):
            handle.write(f"- {link(stem, name)}\n")
        handle.write(f"\n## Conversations ({len(conversations)})\n\n")
        for stem, _title in conversations.values():
            handle.write(f"- {link(stem, stem)}\n")


def _stream(
    conn: Connection, query: LiteralString, params: tuple[Any, ...]
) -> Iterator[tuple[Any, ...]]:
    with conn.cursor(name="elephant_vault") as cursor:
        cursor.itersize = FETCH
        cursor.execute(query, params)
        yield from cursor
