"""The key-value store of agent memories: items under a namespace and a key, each put a
new version (the one before stays as history), searched like every memory."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, delete, get, post, put
from litestar.params import JSONBody, Parameter

from app.api.routes import Runtime, Tenant, route
from app.services.store import items
from app.services.store.schemas import (
    Deleted,
    ItemHistory,
    ItemIn,
    ItemList,
    ItemRef,
    ItemSearchIn,
    NamespaceList,
    NamespacesIn,
    PutResult,
    StoreItem,
)
from app.web.route_access import READ, WRITE

Namespace = Annotated[
    str,
    Parameter(
        min_length=1,
        max_length=2100,
        description='The namespace\'s labels joined by "." (e.g. users.u1).',
    ),
]
Key = Annotated[str, Parameter(min_length=1, max_length=200, description="The item's key.")]
Wait = Annotated[bool, Parameter(description="Extract the item's facts now, before answering.")]


def _ref(namespace: str, key: str) -> ItemRef:
    return ItemRef(namespace=namespace.split("."), key=key)


class StoreController(Controller):
    tags = ["store"]

    @route(put, "/store/items", WRITE, "Put an item (a new version; the previous one is kept)")
    def put_item(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[ItemIn], wait: Wait = False
    ) -> PutResult:
        return items.put_item(elephant, tenant, data, wait=wait)

    @route(get, "/store/items", READ, "An item's current version")
    def get_item(
        self, tenant: Tenant, elephant: Runtime, namespace: Namespace, key: Key
    ) -> StoreItem:
        return items.get_item(elephant, tenant, _ref(namespace, key))

    @route(
        delete,
        "/store/items",
        WRITE,
        "Delete an item (its versions stay as history)",
        status_code=200,
    )
    def delete_item(
        self, tenant: Tenant, elephant: Runtime, namespace: Namespace, key: Key
    ) -> Deleted:
        return items.delete_item(elephant, tenant, _ref(namespace, key))

    @route(get, "/store/items/history", READ, "Every version of an item, oldest first")
    def item_history(
        self, tenant: Tenant, elephant: Runtime, namespace: Namespace, key: Key
    ) -> ItemHistory:
        return items.item_history(elephant, tenant, _ref(namespace, key))

    @route(post, "/store/search", READ, "Items by hybrid search or newest first", status_code=200)
    def search_items(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[ItemSearchIn]
    ) -> ItemList:
        return items.search_items(elephant, tenant, data)

    @route(post, "/store/namespaces", READ, "The namespaces holding items", status_code=200)
    def list_namespaces(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[NamespacesIn]
    ) -> NamespaceList:
        return items.list_namespaces(elephant, tenant, data)
