"""Surfacing metrics per collection: counters kept in the store, figures
computed from them."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict, Field

_LEADS_KEPT = 1000
_BINS = 10


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
    calibration: list[tuple[int, float, float]] = Field(default_factory=list)
    """Per confidence decile of engaged offers: (offers, sum of their confidence,
    how many were used or found helpful)."""
    resurfaced: int = 0
    resurfaced_used: int = 0
    """Engaged offers of memories due for spaced repetition, and how many of them
    were used or found helpful (decay effectiveness)."""

    def of(self, conversation_type: str) -> TypeCounts:
        return self.by_type.setdefault(conversation_type, TypeCounts())

    def add_engagement(self, confidence: float, used: bool, *, due: bool) -> None:
        """Count an engaged offer for calibration, and for decay effectiveness
        when its memory was due for spaced repetition."""
        bins = [*self.calibration] + [(0, 0.0, 0.0)] * (_BINS - len(self.calibration))
        b = min(_BINS - 1, max(0, int(confidence * _BINS)))
        n, conf, hits = bins[b]
        bins[b] = (n + 1, conf + confidence, hits + (1.0 if used else 0.0))
        self.calibration = bins
        if due:
            self.resurfaced += 1
            self.resurfaced_used += int(used)

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
            mean_lead_time=statistics.fmean(self.lead_times) if self.lead_times else None,
            calibration_error=expected_calibration_error(self.calibration),
            decay_effectiveness=_ratio(self.resurfaced_used, self.resurfaced),
        )


class SurfaceMetrics(BaseModel):
    """What ``GET /stats`` and ``/metrics`` report about surfacing.

    Attributes:
        precision: (used + helpful) / surfaced.
        dismissal_rate: dismissed / surfaced, overall and per conversation type.
        recall_before_search: explicit recalls (in a conversation) whose top
            results had already been surfaced there / explicit recalls.
        median_lead_time / mean_lead_time: messages between the offer and the
            explicit recall (the median, robust; the mean, the seed's average),
            over the most recent 1,000.
        calibration_error: expected calibration error of surfacing confidence
            against engagement: over confidence deciles of engaged offers, the
            offer-weighted mean gap between the mean confidence and the share
            used or found helpful (0 is perfectly calibrated).
        decay_effectiveness: of engaged offers of memories due for spaced
            repetition, the share used or found helpful (the seed's "% of
            resurfaced memories that get engaged with").
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
    mean_lead_time: float | None = None
    calibration_error: float | None = None
    decay_effectiveness: float | None = None


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def expected_calibration_error(bins: list[tuple[int, float, float]]) -> float | None:
    """ECE over ``(count, sum of confidence, sum of outcomes)`` bins; ``None``
    with no data."""
    total = sum(n for n, _, _ in bins)
    if not total:
        return None
    return sum(abs(conf - hits) for n, conf, hits in bins if n) / total
