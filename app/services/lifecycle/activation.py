"""Activation: how alive a memory or fact is, from importance, age and use.

activation = min(1, importance/100 x (1 + access_boost x ln(1 + uses))) x 0.5^(age / h),
h = lifecycle.half_life_days x importance_factor^((importance - 50) / 50): 23 days at
importance 50, 69 at 100, 7.7 at 0 with the defaults. The age runs from the row's
anchor, the latest of when it was stored, stored again (last_seen_at) and used
(last_accessed_at: a search returned it, it was fetched by id, it was called helpful).

It is computed when read (sql/objects/20_lifecycle.sql, elephant_activation), never
stored: a stored value would need a job rewriting every row as time passes, and each
rewrite of a memory row touches its vector index. Use refreshes it by moving the
anchor, which the access recorder (app/services/retrieval/access_stats.py) and feedback
already do; the uses live aside, in access_stats (one narrow row per item), so moving
the anchor never rewrites a memory or fact row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from app.config import LifecycleSettings

# The anchor of each table, as SQL over its alias {a} and its access_stats row {u}
# (facts are never stored again).
MEMORY_ANCHOR = "greatest({a}.created_at, {a}.last_seen_at, {u}.last_accessed_at)"
FACT_ANCHOR = "greatest({a}.created_at, {u}.last_accessed_at)"


@dataclass(frozen=True, slots=True)
class ActivationParams:
    """The decay curve: the last three arguments of elephant_activation."""

    half_life_days: float
    importance_factor: float
    access_boost: float

    @classmethod
    def of(cls, settings: LifecycleSettings) -> ActivationParams:
        return cls(settings.half_life_days, settings.importance_factor, settings.access_boost)

    def sql_args(self) -> dict[str, float]:
        return {
            "activation_half_life_days": self.half_life_days,
            "activation_importance_factor": self.importance_factor,
            "activation_access_boost": self.access_boost,
        }

    def half_life(self, importance: float) -> float:
        """Days, for a row of this importance."""
        clamped = min(100.0, max(0.0, importance))
        return float(self.half_life_days * self.importance_factor ** ((clamped - 50.0) / 50.0))

    def activation(
        self, importance: float, anchor: datetime, access_count: int, at: datetime
    ) -> float:
        """The same formula as elephant_activation, for reports and tests."""
        strength = min(
            1.0,
            max(0.0, importance / 100.0)
            * (1.0 + max(0.0, self.access_boost) * math.log1p(max(access_count, 0))),
        )
        age_days = max(0.0, (at - anchor).total_seconds() / 86400.0)
        return float(strength * 0.5 ** min(200.0, age_days / self.half_life(importance)))


def sql_call(table_alias: str, uses_alias: str, anchor: str, at: str = "now()") -> str:
    """elephant_activation(...) over a row of memories or facts aliased ``table_alias``
    and its access_stats row (left joined) aliased ``uses_alias``, with the curve's
    parameters as named placeholders (ActivationParams.sql_args)."""
    a, u = table_alias, uses_alias
    return (
        f"elephant_activation({a}.importance, {anchor.format(a=a, u=u)}, {u}.access_count, "
        f"{at}, %(activation_half_life_days)s, %(activation_importance_factor)s, "
        "%(activation_access_boost)s)"
    )
