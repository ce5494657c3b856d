"""Surfacing metrics per collection: counters kept in the store, figures
computed from them."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict, Field

_LEADS_KEPT = 1000


class TypeCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    surfaced: int = 0
    used: int = 0
    helpful: int = 0
    ignored: int = 0
    dismissed: int = 0


class SurfaceCounters(BaseModel):
    """Raw counts: offers and engagements per conversation type, explicit recalls
    inside conversations and how many of them had been surfaced first, and the
    most recent lead times (messages from offer to explicit need)."""

    model_config = ConfigDict(extra="forbid")

    by_type: dict[str, TypeCounts] = Field(default_factory=dict)
    explicit_recalls: int = 0
    surfaced_before_search: int = 0
    lead_times: list[int] = Field(default_factory=list)

    def of(self, conversation_type: str) -> TypeCounts:
        return self.by_type.setdefault(conversation_type, TypeCounts())

    def add_lead(self, lead: int) -> None:
        self.lead_times = [*self.lead_times, lead][-_LEADS_KEPT:]

    def summary(self) -> SurfaceMetrics:
        total = TypeCounts()
        for counts in self.by_type.values():
            for name in TypeCounts.model_fields:
                setattr(total, name, getattr(total, name) + getattr(counts, name))
        return SurfaceMetrics(
            surfaced=total.surfaced,
            engagements={
                "used": total.used,
                "helpful": total.helpful,
                "ignored": total.ignored,
                "dismissed": total.dismissed,
            },
            precision=_ratio(total.used + total.helpful, total.surfaced),
            dismissal_rate=_ratio(total.dismissed, total.surfaced),
            dismissal_rate_by_type={
                t: r
                for t, c in sorted(self.by_type.items())
                if (r := _ratio(c.dismissed, c.surfaced)) is not None
            },
            explicit_recalls=self.explicit_recalls,
            recall_before_search=_ratio(self.surfaced_before_search, self.explicit_recalls),
            median_lead_time=statistics.median(self.lead_times) if self.lead_times else None,
        )


class SurfaceMetrics(BaseModel):
    """What ``GET /stats`` and ``/metrics`` report about surfacing.

    Attributes:
        precision: (used + helpful) / surfaced.
        dismissal_rate: dismissed / surfaced, overall and per conversation type.
        recall_before_search: explicit recalls (in a conversation) whose top
            results had already been surfaced there / explicit recalls.
        median_lead_time: messages between the offer and the explicit recall.
    """

    model_config = ConfigDict(extra="forbid")

    surfaced: int
    engagements: dict[str, int]
    precision: float | None
    dismissal_rate: float | None
    dismissal_rate_by_type: dict[str, float]
    explicit_recalls: int
    recall_before_search: float | None
    median_lead_time: float | None


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None
