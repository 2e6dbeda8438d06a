"""What one maintenance run did (or, dry, would do): counts, and details without text."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.protocol import JSONObject


@dataclass(slots=True)
class Report:
    """``counts``: what was (would be) changed, per action; ``detail``: ids, sources,
    cut-off dates; ``more``: a batch limit stopped the run before the end."""

    kind: str
    tenant: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)
    detail: JSONObject = field(default_factory=dict)
    more: bool = False

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> JSONObject:
        return {
            "kind": self.kind,
            "tenant": self.tenant,
            "dry_run": self.dry_run,
            "counts": self.counts,
            "total": self.total,
            "more": self.more,
            "detail": self.detail,
        }
