"""How memories age and are looked after: activation, decay, retention, maintenance jobs.

``lifecycle`` sets the activation half-life and what keeps a memory alive, when it
turns dormant and how long each source is kept; ``maintenance`` schedules the decay,
dedup, backfill, retention and re-embed jobs the worker queues per tenant.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from app.config.base import _json_mapping, _Section

MAINTENANCE_KINDS = ("decay", "dedup", "backfill", "retention", "reembed")


class LifecycleSettings(_Section):
    """Activation, decay and retention of memories (issue 16)."""

    half_life_days: float = Field(
        23.0, gt=0, le=36500, description="Activation half-life of a memory of importance 50."
    )
    importance_factor: float = Field(
        3.0,
        ge=1,
        le=100,
        description="Half-life x this at importance 100, / this at importance 0 (1: "
        "importance does not change the half-life).",
    )
    access_boost: float = Field(
        0.25,
        ge=0,
        le=10,
        description="Activation strength x (1 + this x ln(1 + access count)): use keeps it alive.",
    )
    access_flush_seconds: float = Field(
        5.0,
        ge=0.05,
        le=600,
        description="Uses (search hits, fetches by id) are added up in memory and written to "
        "access_stats as one batch per tenant this often, and at shutdown: a search writes "
        "no memory or fact row. A process killed with SIGKILL loses at most this much.",
    )
    search_weight: float = Field(
        0.0,
        ge=0,
        le=10,
        description="Activation prior in search: a hit gains this x activation / (rrf_k + 1) "
        "(0 = off).",
    )
    dormant_below: float = Field(
        0.05,
        ge=0,
        le=1,
        description="The decay job marks rows below this activation dormant (dormant_at); "
        "nothing is hidden or deleted.",
    )
    retention: dict[str, float] = Field(
        default_factory=dict,
        description='Days to keep each source, e.g. {"chat": 30}: the retention job erases '
        "older conversations, memories and facts of that source (JSON in the environment).",
    )

    @field_validator("retention", mode="before")
    @classmethod
    def _retention(cls, value: Any) -> Any:
        return _json_mapping(value)

    @field_validator("retention")
    @classmethod
    def _retention_days(cls, value: dict[str, float]) -> dict[str, float]:
        for source, days in value.items():
            if not source.strip():
                raise ValueError("a retention source must not be blank")
            if not 0 < days <= 36500:
                raise ValueError(f"retention of {source!r} must be 0-36500 days, got {days}")
        return value


class MaintenanceSettings(_Section):
    """Maintenance jobs (decay, dedup sweep, re-embed, backfill) and their schedule."""

    schedule: dict[str, float] = Field(
        default_factory=lambda: {"decay": 24.0, "dedup": 24.0, "backfill": 6.0, "retention": 24.0},
        description="Hours between runs of each maintenance kind per tenant, queued by the "
        "worker (0 or absent: not scheduled); JSON in the environment.",
    )
    enabled: bool = Field(True, description="The worker queues due maintenance jobs.")
    check_interval_s: float = Field(
        60.0, ge=1, le=86400, description="How often the worker looks for due maintenance."
    )
    dedup_batch: int = Field(
        1000, ge=1, le=100000, description="Notes one dedup sweep job compares."
    )
    decay_batch: int = Field(
        10000, ge=1, le=1000000, description="Rows one decay job marks or wakes, per table."
    )

    @field_validator("schedule", mode="before")
    @classmethod
    def _schedule(cls, value: Any) -> Any:
        return _json_mapping(value)

    @field_validator("schedule")
    @classmethod
    def _schedule_kinds(cls, value: dict[str, float]) -> dict[str, float]:
        for kind, hours in value.items():
            if kind not in MAINTENANCE_KINDS:
                raise ValueError(f"unknown maintenance kind {kind!r}: one of {MAINTENANCE_KINDS}")
            if not 0 <= hours <= 8760:
                raise ValueError(f"interval of {kind!r} must be 0-8760 hours, got {hours}")
            if 0 < hours * 3600 < 60:
                raise ValueError(f"interval of {kind!r} must be at least one minute")
        return value
