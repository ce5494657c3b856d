"""Surfacing figures from the stored counters: lead times, calibration, decay
effectiveness."""

from __future__ import annotations

import pytest

from hippocampus.surface.metrics import SurfaceCounters, expected_calibration_error


def test_lead_time_is_reported_as_median_and_mean() -> None:
    counters = SurfaceCounters()
    for lead in (1, 2, 9):
        counters.add_lead(lead)
    summary = counters.summary()
    assert summary.median_lead_time == 2
    assert summary.mean_lead_time == pytest.approx(4.0)


def test_calibration_error_is_the_weighted_gap_between_confidence_and_use() -> None:
    counters = SurfaceCounters()
    assert counters.summary().calibration_error is None
    # Decile 0.9: confident and always used (gap 0.1); decile 0.3: never used (gap 0.3).
    for _ in range(3):
        counters.add_engagement(0.9, True, due=False)
    counters.add_engagement(0.3, False, due=False)
    assert counters.summary().calibration_error == pytest.approx((3 * 0.1 + 0.3) / 4)
    well = SurfaceCounters()
    for used in (True, False):
        well.add_engagement(0.5, used, due=False)
    assert well.summary().calibration_error == pytest.approx(0.0)
    assert expected_calibration_error([]) is None


def test_decay_effectiveness_counts_only_offers_of_due_memories() -> None:
    counters = SurfaceCounters()
    counters.add_engagement(0.7, True, due=True)
    counters.add_engagement(0.7, False, due=True)
    counters.add_engagement(0.7, False, due=True)
    counters.add_engagement(0.7, True, due=False)
    summary = counters.summary()
    assert summary.decay_effectiveness == pytest.approx(1 / 3)
    assert SurfaceCounters.model_validate(counters.model_dump(mode="json")) == counters
