"""What the store takes and gives back (PUT /store/items, POST /store/search, ...).

An item is a JSON object under a namespace (a path of labels) and a key, as LangGraph's
BaseStore has it; the client's ``ElephantStore`` (client/elephant_client/langgraph.py)
is a BaseStore over these endpoints.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType
from pydantic import BaseModel, ConfigDict, Field

from app.services.common.inputs import Label, Metadata, Name, NamespaceLabel, NonBlank

MAX_DEPTH = 20  # labels in a namespace

Namespace = list[NamespaceLabel]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class ItemIn(_Input):
    namespace: Namespace = Field(
        min_length=1, max_length=MAX_DEPTH, description='The item\'s path, e.g. ["users", "u1"].'
    )
    key: Name = Field(description="Its key in the namespace.")
    value: Metadata = Field(description="The item: a JSON object.")
    text: NonBlank | None = Field(
        None,
        description="What search indexes (embeds, keyword-indexes, extracts facts from); "
        "default: the value's strings, one a line.",
    )
    source: Label = Field("store", description="Where it came from (search can filter on it).")
    subject: Name | None = Field(
        None, description='Who "I" and "my" in the item are; default: the tenant\'s owner.'
    )


class ItemRef(_Input):
    namespace: Namespace = Field(min_length=1, max_length=MAX_DEPTH)
    key: Name


class ItemSearchIn(_Input):
    namespace_prefix: Namespace = Field(
        default_factory=list, max_length=MAX_DEPTH, description="Only items under it ([] all)."
    )
    query: NonBlank | None = Field(
        None,
        max_length=20000,
        description="Hybrid search (dense, keyword and facts, fused); none: the newest first.",
    )
    filter: Metadata | None = Field(
        None, description="Only items whose value contains these fields (JSON containment)."
    )
    limit: int = Field(10, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000)


class NamespacesIn(_Input):
    prefix: list[NamespaceLabel] = Field(
        default_factory=list,
        max_length=MAX_DEPTH,
        description='Namespaces starting with these labels; "*" matches any one label.',
    )
    suffix: list[NamespaceLabel] = Field(
        default_factory=list,
        max_length=MAX_DEPTH,
        description='Namespaces ending with these labels; "*" matches any one label.',
    )
    max_depth: int | None = Field(None, ge=1, le=MAX_DEPTH, description="Cut deeper ones to it.")
    limit: int = Field(100, ge=1, le=1000)
    offset: int = Field(0, ge=0)


class StoreItem(msgspec.Struct, frozen=True, kw_only=True):
    """One version of an item. ``updated_at`` is when this version was put;
    ``superseded_at`` only in a history (when it was replaced or deleted)."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    memory_id: str
    score: float | UnsetType = UNSET
    superseded_at: datetime | UnsetType | None = UNSET
    superseded_by: str | UnsetType | None = UNSET


class PutResult(msgspec.Struct, frozen=True, kw_only=True):
    item: StoreItem
    replaced: str | None  # the memory of the version this put superseded
    job_id: int | None  # its fact extraction
    facts: int | None = None  # with wait: the facts extracted


class ItemList(msgspec.Struct, frozen=True, kw_only=True):
    items: list[StoreItem]


class ItemHistory(msgspec.Struct, frozen=True, kw_only=True):
    namespace: list[str]
    key: str
    versions: list[StoreItem]


class Deleted(msgspec.Struct, frozen=True, kw_only=True):
    deleted: bool
    memory_id: str | None


class NamespaceList(msgspec.Struct, frozen=True, kw_only=True):
    namespaces: list[list[str]]
