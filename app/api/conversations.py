"""Conversation endpoints: the list, one lossless transcript with its windows, handoffs.

Read-only views over app.services.memory.transcripts (the console's Conversations pages show
the same). Lists page by ``cursor`` (keyset), newest first.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.params import Parameter, PathParameter

from app.api.params import Cursor, PageLimit
from app.api.routes import Runtime, Tenant, route
from app.services.memory import transcripts
from app.web.route_access import READ

Source = Annotated[
    str | None, Parameter(min_length=1, max_length=100, description="Only this source.")
]
ConversationRef = Annotated[
    str,
    PathParameter(
        min_length=1,
        max_length=200,
        description="The conversation's id, or the conversation_id it was committed with.",
    ),
]


class ConversationsController(Controller):
    tags = ["conversations"]

    @route(get, "/conversations", READ, "Conversations, newest first, paged")
    def list_conversations(
        self,
        tenant: Tenant,
        elephant: Runtime,
        source: Source = None,
        limit: PageLimit = 50,
        cursor: Cursor = None,
    ) -> transcripts.ConversationPage:
        return transcripts.list_conversations(
            elephant, tenant, source=source, limit=limit, cursor=cursor
        )

    @route(
        get,
        "/conversations/{conversation_id:str}",
        READ,
        "One conversation: every turn, its windows with the gate's decisions, handoffs",
    )
    def get_conversation(
        self, tenant: Tenant, elephant: Runtime, conversation_id: ConversationRef
    ) -> transcripts.Transcript:
        return transcripts.get_transcript(elephant, tenant, conversation_id)

    @route(get, "/handoffs", READ, "Session handoffs, newest first")
    def list_handoffs(
        self,
        tenant: Tenant,
        elephant: Runtime,
        project: Annotated[
            str | None, Parameter(min_length=1, max_length=200, description="Only this project.")
        ] = None,
        limit: PageLimit = 50,
        cursor: Cursor = None,
    ) -> transcripts.HandoffPage:
        return transcripts.list_handoffs(
            elephant, tenant, project=project, limit=limit, cursor=cursor
        )
