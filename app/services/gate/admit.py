"""A-MAC admission gate: is a memory worth keeping?

relevance and specificity (0-10) come from the LLM when one is configured, or from
offline heuristics; novelty (0-10) is measured against the nearest stored
memories; the composite is their mean, compared with the tenant's threshold.
The text reaches the LLM as quoted data (app.prompts.gate), so a memory cannot
write its own scores; an LLM failure falls back to the offline scorer and the
log says so. Every decision is written to admission_log (read back by
app/services/gate/decisions.py). The tenant's threshold is read and set here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from app.db.resources import load_sql
from app.db.runtime import Connection
from app.prompts import gate as gate_prompt
from app.providers.llm import LLMError
from app.services.common.text import preview
from app.services.gate.scoring import offline_scores
from app.services.ops import metrics
from app.services.ops.usage import complete_recorded
from app.services.runtime import Elephant

Decision = Literal["accepted", "rejected", "forced", "duplicate"]
# Cosine similarity below which a neighbour says nothing about novelty (MiniLM puts
# unrelated sentences around 0.0-0.25).
UNRELATED_SIMILARITY = 0.2


@dataclass(frozen=True, slots=True)
class GateVerdict:
    decision: Decision
    relevance: float | None
    novelty: float | None
    specificity: float | None
    composite: float | None
    threshold: float
    reason: str
    scorer: str

    @property
    def admitted(self) -> bool:
        return self.decision in ("accepted", "forced")

    def rounded(self) -> GateVerdict:
        """The verdict with its numbers to 3 decimals, as the API shows it."""
        return replace(
            self,
            relevance=_round(self.relevance),
            novelty=_round(self.novelty),
            specificity=_round(self.specificity),
            composite=_round(self.composite),
            threshold=round(self.threshold, 3),
        )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass(frozen=True, slots=True)
class GateThreshold:
    """The admission threshold in force for a tenant."""

    threshold: float


def novelty(max_similarity: float | None) -> float:
    """10 when nothing similar is stored, falling linearly to 0 for an identical text."""
    if max_similarity is None:
        return 10.0
    span = 1.0 - UNRELATED_SIMILARITY
    return round(10.0 * min(1.0, max(0.0, (1.0 - max_similarity) / span)), 3)


def tenant_threshold(conn: Connection, elephant: Elephant, tenant: str) -> float:
    row = conn.execute(
        "SELECT (settings ->> 'gate_threshold')::real FROM tenants WHERE id = %s", (tenant,)
    ).fetchone()
    if row and row[0] is not None:
        return float(row[0])
    return elephant.settings.gate.threshold


def set_threshold(elephant: Elephant, tenant: str, threshold: float | None) -> GateThreshold:
    """Override (or with None, clear) this tenant's gate threshold; returns the one in force."""
    with elephant.db.tenant(tenant) as conn:
        if threshold is None:
            conn.execute(
                "UPDATE tenants SET settings = settings - 'gate_threshold' WHERE id = %s", (tenant,)
            )
        else:
            conn.execute(
                "UPDATE tenants SET settings = settings || %s::jsonb WHERE id = %s",
                (json.dumps({"gate_threshold": threshold}), tenant),
            )
        return GateThreshold(threshold=tenant_threshold(conn, elephant, tenant))


def judge(
    elephant: Elephant,
    conn: Connection,
    tenant: str,
    texts: Sequence[str],
    max_similarities: Sequence[float | None],
    *,
    force: bool = False,
) -> list[GateVerdict]:
    """One verdict per text; nothing is written here except LLM usage rows."""
    threshold = tenant_threshold(conn, elephant, tenant)
    verdicts = []
    for text, similarity in zip(texts, max_similarities, strict=True):
        nov = novelty(similarity)
        if force or not elephant.settings.gate.enabled:
            scores = offline_scores(text)
            decision: Decision = "forced" if force else "accepted"
            reason = "forced by the caller" if force else "gate disabled in settings"
            verdicts.append(
                _verdict(
                    decision,
                    scores.relevance,
                    nov,
                    scores.specificity,
                    threshold,
                    reason,
                    "offline (recorded, not applied)",
                )
            )
            continue
        relevance, specificity, reason, scorer = _score(elephant, conn, tenant, text)
        composite = (relevance + nov + specificity) / 3
        decision = "accepted" if composite >= threshold else "rejected"
        verdicts.append(_verdict(decision, relevance, nov, specificity, threshold, reason, scorer))
    return verdicts


def _verdict(
    decision: Decision,
    relevance: float,
    nov: float,
    specificity: float,
    threshold: float,
    reason: str,
    scorer: str,
) -> GateVerdict:
    return GateVerdict(
        decision=decision,
        relevance=relevance,
        novelty=nov,
        specificity=specificity,
        composite=round((relevance + nov + specificity) / 3, 3),
        threshold=threshold,
        reason=reason,
        scorer=scorer,
    )


def _score(
    elephant: Elephant, conn: Connection, tenant: str, text: str
) -> tuple[float, float, str, str]:
    llm = elephant.llm
    if llm is not None:
        try:
            scores = complete_recorded(
                llm,
                conn,
                tenant,
                "gate",
                system=gate_prompt.SYSTEM,
                prompt=gate_prompt.build_prompt(text),
                schema=gate_prompt.GateScores,
                max_tokens=300,
            ).value
        except LLMError as exc:
            fallback = offline_scores(text)
            return (
                fallback.relevance,
                fallback.specificity,
                fallback.reason,
                f"offline (fallback: {llm.provider} failed: {preview(exc.message, 120)})",
            )
        return scores.relevance, scores.specificity, scores.reason, elephant.scorer_name
    offline = offline_scores(text)
    return offline.relevance, offline.specificity, offline.reason, "offline"


@dataclass(frozen=True, slots=True)
class LoggedDecision:
    """One admission_log row: a verdict on a text, and where the text came from. For a
    duplicate, ``memory_id`` is the memory it duplicates; for a window, the conversation
    and turn range it was cut from."""

    verdict: GateVerdict
    memory_id: str | None
    kind: str
    source: str
    text: str
    content_hash: str
    conversation_id: str | None = None
    turn_start: int | None = None
    turn_end: int | None = None


def log_decisions(conn: Connection, tenant: str, rows: Sequence[LoggedDecision]) -> None:
    """A rejected text is kept whole (rejected_text), so an operator can still admit it
    (app.services.gate.decisions); the other decisions keep a preview only, their text is in
    memories."""
    for row in rows:
        metrics.record_gate(row.kind, row.verdict.decision)
    with conn.cursor() as cursor:
        cursor.executemany(
            load_sql("gate/log_decision.sql"),
            [
                (
                    tenant,
                    row.memory_id,
                    row.kind,
                    row.source,
                    preview(row.text),
                    row.content_hash,
                    row.verdict.relevance,
                    row.verdict.novelty,
                    row.verdict.specificity,
                    row.verdict.composite,
                    row.verdict.threshold,
                    row.verdict.decision,
                    row.verdict.reason,
                    row.verdict.scorer,
                    row.text if row.verdict.decision == "rejected" else None,
                    row.conversation_id,
                    row.turn_start,
                    row.turn_end,
                )
                for row in rows
            ],
        )


def duplicate_verdict(threshold: float, reason: str) -> GateVerdict:
    return GateVerdict("duplicate", None, None, None, None, threshold, reason, "dedup")
