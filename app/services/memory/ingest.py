"""Bulk ingest: JSONL of notes or conversations, or a LoCoMo file, through the write path.

Every item goes through the same commit functions as the API (gate, dedup,
windows, jobs); a conversation's windows are embedded in one batch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from pydantic import ValidationError

from app.errors import InvalidInput
from app.protocol import JSONObject
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.schemas import ConversationIn, NoteIn
from app.services.runtime import Elephant

_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Item:
    tenant: str
    payload: NoteIn | ConversationIn


@dataclass
class IngestReport:
    notes: int = 0
    conversations: int = 0
    turns: int = 0
    windows_stored: int = 0
    stored: int = 0
    duplicates: int = 0
    rejected: int = 0
    tenants: list[str] = field(default_factory=list)


def tenant_slug(value: str) -> str:
    slug = re.sub(r"[^a-z0-9_-]+", "-", value.lower()).strip("-")
    return slug[:63] or "default"


def detect_format(path: Path) -> str:
    with path.open() as handle:
        head = handle.read(1).strip()
        while head == "":
            char = handle.read(1)
            if char == "":
                return "jsonl"
            head = char.strip()
    return "locomo" if head == "[" else "jsonl"


def read_items(
    path: Path, tenant: str, fmt: str = "auto", split_tenants: bool = False
) -> list[Item]:
    """Parse the whole file first, so a bad line stops the ingest before anything is written."""
    kind = detect_format(path) if fmt == "auto" else fmt
    if kind == "locomo":
        return list(_locomo_items(path, tenant, split_tenants))
    if kind == "jsonl":
        return list(_jsonl_items(path, tenant))
    raise InvalidInput(f"unknown format {fmt!r}: use auto, jsonl or locomo")


def _jsonl_items(path: Path, tenant: str) -> Iterator[Item]:
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                item_tenant = tenant_slug(str(record.pop("tenant", tenant)))
                payload: NoteIn | ConversationIn
                if "turns" in record:
                    payload = ConversationIn.model_validate(record)
                else:
                    payload = NoteIn.model_validate(record)
            except (json.JSONDecodeError, ValidationError, AttributeError) as exc:
                raise InvalidInput(f"{path}:{number}: {exc}") from None
            yield Item(item_tenant, payload)


def _locomo_items(path: Path, tenant: str, split_tenants: bool) -> Iterator[Item]:
    samples = json.loads(path.read_text())
    for sample in samples:
        sample_id = str(sample.get("sample_id", "sample"))
        item_tenant = tenant_slug(f"{tenant}-{sample_id}") if split_tenants else tenant
        for number, turns, date in locomo_sessions(sample):
            yield Item(
                item_tenant,
                ConversationIn.model_validate(
                    {
                        "turns": turns,
                        "session_date": date,
                        "conversation_id": f"{sample_id}:session_{number}",
                        "source": "locomo",
                    }
                ),
            )


class LocomoTurn(TypedDict):
    """A LoCoMo turn in the shape of a TurnIn (validated with its conversation)."""

    speaker: str
    text: str
    id: str | None


def locomo_sessions(sample: JSONObject) -> Iterator[tuple[int, list[LocomoTurn], str | None]]:
    """(session number, turns in our shape, session date string) in session order."""
    conversation = sample["conversation"]
    numbers = sorted(
        int(match.group(1))
        for key in conversation
        if (match := _SESSION_KEY.match(key)) and conversation[key]
    )
    for number in numbers:
        turns: list[LocomoTurn] = []
        for turn in conversation[f"session_{number}"]:
            text = str(turn.get("text", "")).strip()
            caption = turn.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]".strip()
            if not text:
                continue
            turns.append({"speaker": turn["speaker"], "text": text, "id": turn.get("dia_id")})
        if turns:
            yield number, turns, conversation.get(f"session_{number}_date_time")


def ingest(
    elephant: Elephant,
    items: list[Item],
    *,
    on_item: Callable[[Item], None] | None = None,
) -> IngestReport:
    report = IngestReport()
    for item in items:
        if isinstance(item.payload, ConversationIn):
            result = commit_conversation(elephant, item.tenant, item.payload)
            windows = result.window_counts()
            report.conversations += 1
            report.turns += result.turns
            report.windows_stored += windows.stored
            report.stored += windows.stored
            report.duplicates += windows.duplicate
            report.rejected += windows.rejected
        else:
            note = commit_note(elephant, item.tenant, item.payload)
            report.notes += 1
            report.stored += note.status == "stored"
            report.duplicates += note.status == "duplicate"
            report.rejected += note.status == "rejected"
        if item.tenant not in report.tenants:
            report.tenants.append(item.tenant)
        if on_item is not None:
            on_item(item)
    return report
