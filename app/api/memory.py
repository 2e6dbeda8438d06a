"""Write-path endpoints: commit, commit_conversation, feedback, gate metrics, jobs."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get, post, put
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from litestar.params import JSONBody, Parameter, PathParameter
from pydantic import BaseModel, ConfigDict, Field

from app.api.params import Cursor, PageLimit
from app.api.routes import Runtime, Tenant, route
from app.services.access.auth import Principal
from app.services.common.inputs import Real
from app.services.facts import contradictions
from app.services.facts.contradictions import ContradictionList
from app.services.gate import decisions as gate_log
from app.services.gate.admit import GateThreshold, set_threshold
from app.services.gate.decisions import GateMetrics
from app.services.jobs import queue
from app.services.memory.commit import commit_conversation, commit_note
from app.services.memory.feedback import FeedbackIn, FeedbackResult, give_feedback
from app.services.memory.schemas import ConversationIn, ConversationResponse, NoteIn, NoteResponse
from app.web.route_access import ADMIN, READ, WRITE

Wait = Annotated[bool, Parameter(description="Run fact extraction now and return when it is done.")]


class ThresholdIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: Real | None = Field(
        ..., ge=0, le=10, description="New threshold for this tenant; null restores the default."
    )


class MemoryController(Controller):
    tags = ["memory"]

    @route(
        post,
        "/commit",
        WRITE,
        "Store a note (gated, deduplicated)",
        responses={
            200: ResponseSpec(NoteResponse, description="Not stored: a duplicate, or rejected")
        },
    )
    def commit(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[NoteIn], wait: Wait = False
    ) -> Response[NoteResponse]:
        result = commit_note(elephant, tenant, data, wait=wait)
        return Response(result.rounded(), status_code=201 if result.status == "stored" else 200)

    @route(
        post,
        "/commit_conversation",
        WRITE,
        "Store a conversation: raw turns plus gated, overlapping windows",
    )
    def commit_conversation(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[ConversationIn], wait: Wait = False
    ) -> ConversationResponse:
        return commit_conversation(elephant, tenant, data, wait=wait).response()

    @route(post, "/feedback", WRITE, "Mark a memory or fact", status_code=200)
    def feedback(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[FeedbackIn]
    ) -> FeedbackResult:
        return give_feedback(elephant, tenant, data)

    @route(get, "/amac/metrics", READ, "Admission gate counts and scores")
    def amac_metrics(
        self,
        tenant: Tenant,
        elephant: Runtime,
        recent: Annotated[int, Parameter(ge=0, le=200)] = 20,
    ) -> GateMetrics:
        return gate_log.metrics(elephant, tenant, recent)

    @route(
        get,
        "/amac/decisions",
        READ,
        "Gate decisions, newest first, paged; a rejected note's whole text included",
    )
    def amac_decisions(
        self,
        tenant: Tenant,
        elephant: Runtime,
        decision: Annotated[
            str | None,
            Parameter(
                pattern="^(accepted|rejected|forced|duplicate)$",
                description="Only this decision: accepted, rejected, forced or duplicate.",
            ),
        ] = None,
        kind: Annotated[
            str | None, Parameter(pattern="^(note|window)$", description="note or window.")
        ] = None,
        limit: PageLimit = 50,
        cursor: Cursor = None,
    ) -> gate_log.DecisionPage:
        return gate_log.list_decisions(
            elephant, tenant, decision=decision, kind=kind, limit=limit, cursor=cursor
        )

    @route(
        post,
        "/amac/decisions/{decision_id:int}/admit",
        WRITE,
        "Store a rejected note after all (forced; once: 409 when already admitted)",
        responses={
            200: ResponseSpec(
                gate_log.Admission, description="The text had been stored since: a duplicate"
            )
        },
    )
    def amac_admit(
        self,
        principal: NamedDependency[Principal],
        tenant: Tenant,
        elephant: Runtime,
        decision_id: Annotated[int, PathParameter(description="The rejected decision's id.")],
    ) -> Response[gate_log.Admission]:
        result = gate_log.admit(elephant, tenant, decision_id, actor=principal.prefix)
        return Response(result, status_code=201 if result.status == "stored" else 200)

    @route(put, "/amac/threshold", ADMIN, "Set this tenant's gate threshold")
    def amac_threshold(
        self, tenant: Tenant, elephant: Runtime, data: JSONBody[ThresholdIn]
    ) -> GateThreshold:
        return set_threshold(elephant, tenant, data.threshold)

    @route(get, "/contradictions", READ, "Detected contradictions, newest first, paged")
    def contradictions(
        self, tenant: Tenant, elephant: Runtime, limit: PageLimit = 50, cursor: Cursor = None
    ) -> ContradictionList:
        return contradictions.recent(elephant, tenant, limit, cursor)

    @route(get, "/jobs", ADMIN, "The tenant's background jobs (failures stay), newest first, paged")
    def jobs(
        self,
        tenant: Tenant,
        elephant: Runtime,
        status: Annotated[str | None, Parameter(pattern="^(queued|running|done|failed)$")] = None,
        limit: PageLimit = 50,
        cursor: Cursor = None,
    ) -> queue.JobsOverview:
        return queue.overview(elephant.db, tenant, status, limit, cursor)
