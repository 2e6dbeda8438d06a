"""Activation: importance-aware decay, refreshed by use and feedback, as a search prior."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest

from app.config import Settings
from app.services.lifecycle import decay
from app.services.lifecycle.activation import ActivationParams
from app.services.memory.commit import commit_note
from app.services.memory.feedback import FeedbackIn, give_feedback
from app.services.memory.records import get_memory
from app.services.memory.schemas import NoteIn
from app.services.retrieval.schemas import SearchRequest
from app.services.retrieval.search import search
from app.services.runtime import Elephant
from tests.conftest import make_settings

TENANT = "kestrel"
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def settings(pg_data_dir: Path, new_database: Callable[..., str]) -> Settings:
    return make_settings(pg_data_dir, embedded={"database": new_database("lifecycle")})


def activation_sql(
    elephant: Elephant, importance: float, age_days: float, uses: int, params: ActivationParams
) -> float:
    with elephant.db.connection() as conn:
        row = conn.execute(
            "SELECT elephant_activation(%s, %s, %s, %s, %s, %s, %s)",
            (
                importance,
                NOW - timedelta(days=age_days),
                uses,
                NOW,
                params.half_life_days,
                params.importance_factor,
                params.access_boost,
            ),
        ).fetchone()
    assert row is not None
    return float(row[0])


def test_the_sql_function_and_the_python_formula_agree(elephant: Elephant) -> None:
    params = ActivationParams.of(elephant.settings.lifecycle)
    for importance, age, uses in [(50, 0, 0), (50, 23, 0), (100, 10, 3), (0, 5, 0), (80, 400, 1)]:
        expected = params.activation(importance, NOW - timedelta(days=age), uses, NOW)
        assert activation_sql(elephant, importance, age, uses, params) == pytest.approx(expected)
    # the default curve: half of it after 23 days at importance 50
    assert params.activation(50, NOW - timedelta(days=23), 0, NOW) == pytest.approx(0.25)
    # a future anchor counts as now; a very old one is ~0, not an underflow error
    assert activation_sql(elephant, 50, -5, 0, params) == pytest.approx(0.5)
    assert activation_sql(elephant, 50, 365 * 120, 0, params) < 1e-50


def test_important_memories_decay_slower(elephant: Elephant) -> None:
    params = ActivationParams.of(elephant.settings.lifecycle)
    assert params.half_life(50) == pytest.approx(23.0)
    assert params.half_life(100) == pytest.approx(69.0)
    assert params.half_life(0) == pytest.approx(23.0 / 3)
    # relative to its own start, an important memory keeps more after a month
    month = NOW - timedelta(days=30)
    kept_high = params.activation(100, month, 0, NOW) / params.activation(100, NOW, 0, NOW)
    kept_mid = params.activation(50, month, 0, NOW) / params.activation(50, NOW, 0, NOW)
    assert kept_high > 0.7 > kept_mid
    # and use adds strength
    assert params.activation(50, NOW, 3, NOW) > params.activation(50, NOW, 0, NOW)


# ---------------------------------------------------------------- the prior in search


@pytest.fixture(scope="module")
def twins(elephant: Elephant) -> dict[str, str]:
    """Two notes of the same relevance to the query, one stored 120 days ago."""
    ids = {}
    for name, room in (("old", "4"), ("fresh", "7")):
        text = f"The Kestrel project status meeting takes place in room {room}."
        result = commit_note(elephant, TENANT, NoteIn(text=text))
        assert result.memory_id is not None, result
        ids[name] = result.memory_id
    with elephant.db.admin_connection() as conn:
        conn.execute(
            "UPDATE memories SET created_at = now() - interval '120 days', "
            "last_seen_at = now() - interval '120 days' WHERE id = %s",
            (ids["old"],),
        )
    return ids


def ranked(elephant: Elephant, weight: float) -> list[tuple[str, float, float]]:
    request = SearchRequest(
        query="Where does the Kestrel project status meeting take place?",
        limit=2,
        filters={"kind": "note"},
        activation_weight=weight,
        explain=True,
    )
    result = search(elephant, TENANT, request, record_access=False)
    assert result.explain is not None
    assert result.explain.activation_prior.on is (weight > 0)
    return [(hit.id, hit.activation, hit.rrf) for hit in result.hits]


def test_an_old_untouched_memory_ranks_below_a_fresh_one_with_the_prior_on(
    elephant: Elephant, twins: dict[str, str]
) -> None:
    off = ranked(elephant, 0.0)
    assert {hit[0] for hit in off} == set(twins.values())
    rrf = {hit[0]: hit[2] for hit in off}
    # the same relevance: their fused scores differ by at most one rank in each of two lanes
    k = elephant.settings.search.rrf_k
    assert abs(rrf[twins["old"]] - rrf[twins["fresh"]]) <= 2 * (1 / (k + 1) - 1 / (k + 2)) + 1e-9
    on = ranked(elephant, 1.0)
    assert [hit[0] for hit in on] == [twins["fresh"], twins["old"]]
    activation = {hit[0]: hit[1] for hit in on}
    assert activation[twins["fresh"]] == pytest.approx(0.5, abs=0.01)
    assert activation[twins["old"]] == pytest.approx(0.5 * 0.5 ** (120 / 23), abs=0.005)


def test_reading_a_memory_by_id_refreshes_it(elephant: Elephant, twins: dict[str, str]) -> None:
    get_memory(elephant, TENANT, UUID(twins["old"]))
    elephant.access.flush()
    activation = {hit[0]: hit[1] for hit in ranked(elephant, 1.0)}
    # used just now, once: stronger than the fresh one that was never used
    assert activation[twins["old"]] == pytest.approx(0.5 * (1 + 0.25 * math.log(2)), abs=0.01)
    assert activation[twins["old"]] > activation[twins["fresh"]]
    # a prior strong enough to outweigh their small difference in relevance puts it first
    assert [hit[0] for hit in ranked(elephant, 5.0)] == [twins["old"], twins["fresh"]]


def test_a_search_hit_refreshes_what_it_returned(elephant: Elephant) -> None:
    result = commit_note(elephant, "hits", NoteIn(text="Marta keeps her bike in the garage."))
    assert result.memory_id is not None
    with elephant.db.admin_connection() as conn:
        conn.execute(
            "UPDATE memories SET created_at = now() - interval '60 days', "
            "last_seen_at = now() - interval '60 days' WHERE id = %s",
            (result.memory_id,),
        )
    request = SearchRequest(query="Where is Marta's bike?", explain=True)
    before = search(elephant, "hits", request).hits[0]
    assert before.id == result.memory_id and before.activation < 0.1
    elephant.access.flush()
    after = search(elephant, "hits", request, record_access=False).hits[0]
    assert after.activation > 0.5


# ---------------------------------------------------------------- feedback


def memory_state(elephant: Elephant, memory_id: str) -> tuple[float, int, bool, bool]:
    with elephant.db.admin_connection() as conn:
        row = conn.execute(
            "SELECT m.importance, coalesce(a.access_count, 0), "
            "coalesce(a.last_accessed_at > now() - interval '1 minute', false), "
            "m.dormant_at IS NOT NULL FROM memories AS m "
            "LEFT JOIN access_stats AS a ON a.item_id = m.id WHERE m.id = %s",
            (memory_id,),
        ).fetchone()
    assert row is not None
    return float(row[0]), int(row[1]), bool(row[2]), bool(row[3])


def test_feedback_moves_importance_and_helpful_feedback_refreshes(elephant: Elephant) -> None:
    result = commit_note(elephant, "fb", NoteIn(text="Omar's dentist appointment is on Friday."))
    assert result.memory_id is not None
    memory = result.memory_id
    give_feedback(elephant, "fb", FeedbackIn(memory_id=UUID(memory), helpful=False))
    importance, uses, recent, _ = memory_state(elephant, memory)
    assert (importance, uses, recent) == (40.0, 0, False)  # lower, not refreshed
    give_feedback(elephant, "fb", FeedbackIn(memory_id=UUID(memory), helpful=True))
    importance, uses, recent, _ = memory_state(elephant, memory)
    assert (importance, uses, recent) == (45.0, 1, True)


# ---------------------------------------------------------------- the decay job


def test_decay_marks_cold_memories_dormant_and_wakes_them_when_used(elephant: Elephant) -> None:
    tenant = "cold"
    cold = commit_note(elephant, tenant, NoteIn(text="Lena's old locker code was 3141."))
    warm = commit_note(elephant, tenant, NoteIn(text="Lena's team stand-up is at 9:30."))
    assert cold.memory_id is not None and warm.memory_id is not None
    with elephant.db.admin_connection() as conn:
        conn.execute(
            "UPDATE memories SET created_at = now() - interval '200 days', "
            "last_seen_at = now() - interval '200 days' WHERE id = %s",
            (cold.memory_id,),
        )
    with elephant.db.tenant(tenant) as conn:
        dry = decay.run(elephant, conn, tenant, dry_run=True)
    assert dry.counts["memories_dormant"] == 1
    assert memory_state(elephant, cold.memory_id)[3] is False  # a dry run changes nothing
    with elephant.db.tenant(tenant) as conn:
        report = decay.run(elephant, conn, tenant, dry_run=False)
    assert report.counts["memories_dormant"] == 1 and report.counts["memories_woken"] == 0
    assert memory_state(elephant, cold.memory_id)[3] is True
    assert memory_state(elephant, warm.memory_id)[3] is False
    # dormant is not hidden: search still finds it
    hits = search(elephant, tenant, SearchRequest(query="Lena's locker code"), record_access=False)
    assert cold.memory_id in [hit.id for hit in hits.hits]
    # a helpful feedback wakes it at once; a row woken by a search hit waits for the job
    give_feedback(elephant, tenant, FeedbackIn(memory_id=UUID(cold.memory_id), helpful=True))
    assert memory_state(elephant, cold.memory_id)[3] is False
    with elephant.db.admin_connection() as conn:
        conn.execute(
            "UPDATE memories SET dormant_at = now() WHERE id = %s", (warm.memory_id,)
        )  # as if it had gone cold earlier, and been used since
    with elephant.db.tenant(tenant) as conn:
        again = decay.run(elephant, conn, tenant, dry_run=False)
    assert again.counts["memories_woken"] == 1 and again.counts["memories_dormant"] == 0
    assert memory_state(elephant, warm.memory_id)[3] is False
