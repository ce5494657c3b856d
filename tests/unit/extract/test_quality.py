"""The quality gate: features, the prior, reasons, feedback labels, retraining."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from hippocampus.extract.quality import (
    FEATURES,
    QualityConfig,
    QualityModel,
    assess,
    evaluate,
    feedback_label,
    is_holdout,
    quality_features,
    retrain,
)
from hippocampus.model import Memory, RetrievalMeta

PRIOR = QualityModel()
DEFAULT = QualityConfig()
T0 = datetime(2026, 3, 1, tzinfo=UTC)

VAGUE = "fixed the thing, works now"
REASONED_FIX = (
    "Checkout crashed with KeyError in cart.py because the price cache returned None for "
    "items added before the migration. Fixed by falling back to a database lookup, so "
    "old carts load again:\n"
    "```python\nprice = cache.get(sku) or db.price(sku)\n```"
)


def _feature(text: str, name: str, trust: float = 0.5) -> float:
    return float(quality_features(text, trust)[FEATURES.index(name)])


def test_a_vague_one_liner_is_rejected_with_reasons() -> None:
    verdict = assess(VAGUE, None, PRIOR, DEFAULT)
    assert verdict.score < 0.3
    assert not verdict.accepted
    assert any(r.startswith("too short: 5 words") for r in verdict.reasons)
    assert any("vague wording (fixed, thing, works)" in r for r in verdict.reasons)


def test_a_reasoned_fix_with_code_is_accepted_with_a_high_score() -> None:
    verdict = assess(REASONED_FIX, None, PRIOR, DEFAULT)
    assert verdict.accepted
    assert verdict.score > 0.95
    assert verdict.reasons == []
    assert verdict.features["code"] == 1.0
    assert verdict.features["reasoning"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "Payment gateway timeouts during checkout",
        "Team lunch moved to Friday",
        "kafka consumer lag",
        "Pin the driver to 5.1",
    ],
)
def test_short_specific_statements_pass_the_default_gate(text: str) -> None:
    assert assess(text, None, PRIOR, DEFAULT).accepted


@pytest.mark.parametrize("text", ["ok", "x", "stuff", "done", "maybe later"])
def test_single_words_and_filler_are_rejected(text: str) -> None:
    assert not assess(text, None, PRIOR, DEFAULT).accepted


def test_features_see_code_reasoning_richness_and_vagueness() -> None:
    assert _feature("Run `make test` before pushing", "code") == 0.5
    assert _feature("call retry_with_backoff() on timeouts", "code") == 0.5
    assert _feature("plain words only here", "code") == 0.0
    assert _feature("slow because the index was dropped", "reasoning") == 0.5
    assert _feature("slow because of X, therefore we cache", "reasoning") == 1.0
    assert _feature("kafka kafka kafka kafka", "richness") == 0.25
    assert _feature("something somehow", "vagueness") == 1.0
    assert _feature("anything", "trust", trust=0.9) == 0.9


def test_source_trust_moves_the_score_and_an_exempt_source_is_never_rejected() -> None:
    config = QualityConfig(source_trust={"scribe": 0.9, "spammer": 0.0, "human": 1.0})
    text = "Invoice totals were off by one cent"
    assert (
        assess(text, "scribe", PRIOR, config).score
        > assess(text, None, PRIOR, config).score
        > assess(text, "spammer", PRIOR, config).score
    )
    assert any("low trust" in r for r in assess(VAGUE, "spammer", PRIOR, config).reasons)
    note = assess("ok", "human", PRIOR, config)
    assert note.accepted and note.score < 0.3


def test_the_threshold_is_configurable() -> None:
    text = "Beta memory"
    score = assess(text, None, PRIOR, DEFAULT).score
    assert assess(text, None, PRIOR, QualityConfig(min_score=score + 0.01)).accepted is False
    assert assess(VAGUE, None, PRIOR, QualityConfig(min_score=0.0)).accepted is True


def _memory(mid: str, **retrieval: object) -> Memory:
    return Memory(
        id=mid,
        collection="c",
        content="text",
        created_at=T0,
        updated_at=T0,
        content_hash="h",
        retrieval=RetrievalMeta.model_validate(retrieval),
    )


def test_feedback_label_reads_engagement() -> None:
    assert feedback_label(_memory("a")) is None
    assert feedback_label(_memory("b", usage_count=2, confidence=0.7)) is True
    assert feedback_label(_memory("c", recent_dismissals=2.0, confidence=0.35)) is False
    assert feedback_label(_memory("d", confidence=0.48)) is False
    assert feedback_label(_memory("e", irrelevant_contexts=["billing"])) is False


def _examples(n: int, good_when_long: bool) -> list[tuple[str, np.ndarray, bool]]:
    """Labeled feature rows: long texts helpful (or the reverse), short ones not."""
    out = []
    rng = np.random.default_rng(7)
    for i in range(n):
        long = i % 2 == 0
        words = int(rng.integers(25, 60)) if long else int(rng.integers(2, 6))
        text = " ".join(f"term{j}" for j in range(words))
        out.append((f"m{i}", quality_features(text, 0.5), long == good_when_long))
    return out


def test_retraining_on_feedback_keeps_a_better_model_and_records_metrics() -> None:
    examples = _examples(400, good_when_long=False)  # feedback disagrees with the prior
    model = retrain(PRIOR, examples, feedback=400, now=T0, config=DEFAULT)
    run = model.last_training
    assert run is not None and run.accepted
    assert model.version == 1 and model.trained_at == T0 and model.feedback_seen == 400
    assert run.candidate is not None and run.previous is not None
    assert run.candidate.log_loss < run.previous.log_loss
    assert run.candidate.examples + run.train_examples == 400
    assert model.weights["length"] < PRIOR.weights["length"]  # learned: long is worse here


def test_a_retrained_model_that_predicts_held_out_feedback_worse_is_discarded() -> None:
    # Training rows say long texts help; held-out rows say the opposite.
    examples = [
        (mid, x, (not label) if is_holdout(mid, DEFAULT.holdout_fraction) else label)
        for mid, x, label in _examples(400, good_when_long=True)
    ]
    model = retrain(PRIOR, examples, feedback=400, now=T0, config=DEFAULT)
    run = model.last_training
    assert run is not None and not run.accepted
    assert run.candidate is not None and run.previous is not None
    assert run.candidate.log_loss > run.previous.log_loss
    assert model.weights == PRIOR.weights and model.version == 0 and model.trained_at is None
    assert model.feedback_seen == 400  # counted: the next try waits for 500 more


def test_too_little_feedback_trains_nothing() -> None:
    model = retrain(PRIOR, [], feedback=0, now=T0, config=DEFAULT)
    assert model.last_training is not None and not model.last_training.accepted
    assert model.weights == PRIOR.weights


def test_evaluate_reports_log_loss_accuracy_and_auc() -> None:
    x = np.vstack([quality_features(REASONED_FIX, 0.5), quality_features(VAGUE, 0.5)])
    metrics = evaluate(PRIOR, x, np.array([1.0, 0.0]))
    assert metrics.accuracy == 1.0 and metrics.auc == 1.0 and metrics.log_loss < 0.1
    flipped = evaluate(PRIOR, x, np.array([0.0, 1.0]))
    assert flipped.accuracy == 0.0 and flipped.auc == 0.0
    assert evaluate(PRIOR, x[:1], np.array([1.0])).auc is None


def test_holdout_split_is_stable_and_near_its_fraction() -> None:
    ids = [f"memory-{i}" for i in range(2000)]
    held = [i for i in ids if is_holdout(i, 0.2)]
    assert held == [i for i in ids if is_holdout(i, 0.2)]
    assert 0.15 < len(held) / len(ids) < 0.25
