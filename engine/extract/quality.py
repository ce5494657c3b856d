"""The quality gate: is a memory worth storing?

A few features of the text and its source (length, vocabulary richness, code,
reasoning words, specificity, vague wording, source trust) are scored 0–1 by a
logistic model. Until there is feedback the model is a hand-set prior: long,
specific, reasoned text with code scores high; a vague one-liner scores low.
Feedback (which memories turned out helpful) retrains it: a MAP fit pulled
towards the current weights, kept only if it predicts held-out feedback at
least as well as the model it would replace.

Pure: features, scores, training and evaluation are functions of their
arguments; the service loads and saves :class:`QualityModel` through the store.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model import Memory

FEATURES: tuple[str, ...] = (
    "length",
    "richness",
    "code",
    "reasoning",
    "specificity",
    "vagueness",
    "trust",
)
"""The features, in the order of the model's weights."""

PRIOR_WEIGHTS: dict[str, float] = {
    "length": 3.5,
    "richness": 0.5,
    "code": 1.5,
    "reasoning": 1.5,
    "specificity": 3.0,
    "vagueness": -3.0,
    "trust": 2.0,
}
PRIOR_BIAS = -4.0
"""The prior: a five-word specific statement from an unknown source scores about
0.8, a single vague word about 0.02, a reasoned fix with code above 0.99."""

REASONING_WORDS = frozenset(
    """
    because therefore since thus hence so consequently caused cause causes why due
    reason instead otherwise means result led fixed_by root_cause whereas although
    """.split()
)
_REASONING_PHRASES = ("so that", "due to", "as a result", "which means", "root cause", "caused by")
VAGUE_WORDS = frozenset(
    """
    thing things stuff something somehow whatever etc misc various somewhere someone
    anything everything maybe probably perhaps kinda sorta lol idk tbd todo fixme
    asap ok okay yes yeah yep nope done works worked fixed broken later stuff
    """.split()
)
_STOP_WORDS = frozenset(
    """
    a an the and or but if of to in on at by for from with as is are was were be been
    being it its this that these those i we you he she they me us him them my our your
    his her their not no do does did have has had will would can could should may might
    must just very really also too then than there here now again still up down out over
    """.split()
)
_WORD = re.compile(r"[^\W_][\w.+#'/-]*[^\W_]|[^\W_]", re.UNICODE)
_FENCE = re.compile(r"```|~~~|^(?: {4}|\t)\S", re.MULTILINE)
_INLINE_CODE = re.compile(
    r"`[^`\n]+`"  # inline code
    r"|\b[A-Za-z_]\w*\([^()\n]{0,40}\)"  # call()
    r"|\b[a-z]+_[a-z0-9_]+\b"  # snake_case
    r"|\b[a-z]+[A-Z]\w*\b"  # camelCase
    r"|\b\w+\.\w+\.\w+\b"  # dotted.module.path
    r"|(?<!\w)--[a-z][\w-]+"  # --flag
    r"|\b\w+=\S+"  # key=value
)
_NUMBERISH = re.compile(r"\d")
_LENGTH_SATURATION = 60  # words at which the length feature reaches 1
_SPECIFIC_FLOOR = 4  # words a text needs before it can be fully specific


class QualityConfig(BaseModel):
    """How the gate judges.

    Attributes:
        min_score: memories scoring below this are rejected (0 disables rejection).
        source_trust: trust per source name, 0–1; a feature of the model.
        default_trust: the trust of a source not in ``source_trust`` (and of none).
        exempt_trust: a source trusted at least this much is scored but never
            rejected, nor quarantined for low quality: a person's deliberate short
            note, a system of record.
        retrain_every: the model retrains each time this many more memories have
            feedback.
        min_train_examples: fewer memories with feedback to train on than this, and
            no model is trained (the run says so).
        holdout_fraction: the share of feedback kept out of training to compare
            the new model with the old.
        l2: how strongly a retrained model is held to the weights it starts from.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_score: float = Field(default=0.3, ge=0.0, le=1.0)
    source_trust: dict[str, float] = Field(default_factory=dict)
    default_trust: float = Field(default=0.5, ge=0.0, le=1.0)
    exempt_trust: float = Field(default=1.0, ge=0.0, le=1.0)
    retrain_every: int = Field(default=500, ge=1)
    holdout_fraction: float = Field(default=0.2, gt=0.0, lt=1.0)
    min_train_examples: int = Field(default=10, ge=1)
    l2: float = Field(default=1.0, ge=0.0)

    def trust_of(self, source: str | None) -> float:
        """The configured trust of ``source``."""
        if source is None:
            return self.default_trust
        trust = self.source_trust.get(source, self.default_trust)
        return min(1.0, max(0.0, trust))

    def exempt(self, source: str | None) -> bool:
        """Whether memories from ``source`` are never rejected for quality."""
        return self.trust_of(source) >= self.exempt_trust


class TrainingMetrics(BaseModel):
    """How a model predicted held-out feedback."""

    model_config = ConfigDict(extra="forbid")

    examples: int = Field(description="Held-out memories with feedback it was scored on.")
    log_loss: float
    accuracy: float
    auc: float | None = Field(default=None, description="None when one class is missing.")


class TrainingRun(BaseModel):
    """One retraining: when, on what, how both models did, which one was kept."""

    model_config = ConfigDict(extra="forbid")

    at: datetime
    feedback: int = Field(description="Memories with feedback in the collection.")
    train_examples: int
    accepted: bool
    reason: str
    candidate: TrainingMetrics | None = None
    previous: TrainingMetrics | None = None


class QualityModel(BaseModel):
    """Logistic-regression weights by feature, with their history.

    Attributes:
        version: 0 for the prior; +1 each time a retrained model is kept.
        trained_at: when the current weights were trained (``None``: the prior).
        feedback_seen: memories with feedback at the last retraining (kept or not).
        last_training: the last retraining, kept or not.
    """

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, float] = Field(default_factory=lambda: dict(PRIOR_WEIGHTS))
    bias: float = PRIOR_BIAS
    version: int = 0
    trained_at: datetime | None = None
    feedback_seen: int = 0
    last_training: TrainingRun | None = None

    def vector(self) -> tuple[npt.NDArray[np.float64], float]:
        """The weights in :data:`FEATURES` order, and the bias."""
        return np.array([self.weights.get(f, 0.0) for f in FEATURES]), self.bias

    def score(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Probability of being helpful, per row of ``features``."""
        w, b = self.vector()
        return _sigmoid(features @ w + b)


@dataclass(frozen=True)
class QualityAssessment:
    """The gate's verdict on one text.

    Attributes:
        score: 0–1.
        accepted: whether the memory may be stored.
        reasons: why it scored low (empty when nothing stands out).
        features: the feature values, by name.
    """

    score: float
    accepted: bool
    reasons: list[str]
    features: dict[str, float]


def quality_features(text: str, trust: float) -> npt.NDArray[np.float64]:
    """The feature vector of a text (in :data:`FEATURES` order), each in [0, 1]."""
    words = [w.casefold() for w in _WORD.findall(text)]
    n = len(words)
    if n == 0:
        return np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, trust])
    length = min(1.0, math.log1p(n) / math.log1p(_LENGTH_SATURATION))
    richness = len(set(words)) / n
    if _FENCE.search(text):
        code = 1.0
    elif _INLINE_CODE.search(text):
        code = 0.5
    else:
        code = 0.0
    lowered = text.casefold()
    reasons = sum(1 for w in words if w in REASONING_WORDS) + sum(
        lowered.count(p) for p in _REASONING_PHRASES
    )
    reasoning = min(1.0, reasons / 2.0)
    vague = sum(1 for w in words if w in VAGUE_WORDS)
    specific = sum(
        1
        for w in words
        if w not in VAGUE_WORDS
        and w not in _STOP_WORDS
        and (len(w) > 1 or _NUMBERISH.search(w) is not None)
    )
    specificity = specific / max(n, _SPECIFIC_FLOOR)
    vagueness = vague / n
    return np.array([length, richness, code, reasoning, specificity, vagueness, trust])


def assess(
    text: str, source: str | None, model: QualityModel, config: QualityConfig
) -> QualityAssessment:
    """Score a text with ``model`` and decide by ``config``; the reasons name what
    pulled the score down, in plain words."""
    trust = config.trust_of(source)
    x = quality_features(text, trust)
    score = float(model.score(x[None, :])[0])
    exempt = config.exempt(source)
    accepted = exempt or score >= config.min_score
    named = dict(zip(FEATURES, (float(v) for v in x), strict=True))
    reasons = _reasons(text, named, source, trust) if score < max(config.min_score, 0.5) else []
    return QualityAssessment(score=score, accepted=accepted, reasons=reasons, features=named)


def _reasons(text: str, f: Mapping[str, float], source: str | None, trust: float) -> list[str]:
    words = _WORD.findall(text)
    out: list[str] = []
    if len(words) < 6:
        out.append(
            f"too short: {len(words)} word{'s' if len(words) != 1 else ''}; a memory should "
            "stand on its own (what happened, where, what to do)"
        )
    if f["vagueness"] >= 0.2:
        vague = sorted({w.casefold() for w in words if w.casefold() in VAGUE_WORDS})
        out.append(f"vague wording ({', '.join(vague)}): name the thing, the place, the fix")
    if f["specificity"] < 0.5:
        out.append("few specific words: name components, errors, versions or numbers")
    if f["reasoning"] == 0.0 and len(words) >= 6:
        out.append("no reasoning: say why (because, so that, therefore ...)")
    if f["richness"] < 0.4 and len(words) >= 6:
        out.append("repetitive: the same few words over and over")
    if trust < 0.5:
        out.append(f"source {source!r} has low trust ({trust:.2f})")
    return out


# -- feedback and training ------------------------------------------------------


def feedback_label(memory: Memory) -> bool | None:
    """Whether a memory turned out helpful, from the engagement it received;
    ``None`` while it has none.

    A memory has feedback once engagement moved it: it was used (``usage_count``),
    ignored or dismissed (``recent_dismissals``, contexts marked irrelevant), or
    its confidence left the starting 0.5. It counts as helpful when its
    confidence stands at 0.5 or above and it was used: used/helpful raise
    confidence, ignored/dismissed lower it.
    """
    r = memory.retrieval
    engaged = (
        r.usage_count > 0
        or r.recent_dismissals > 0
        or bool(r.irrelevant_contexts)
        or r.confidence != 0.5
    )
    if not engaged:
        return None
    return r.confidence >= 0.5 and r.usage_count > 0


def is_holdout(memory_id: str, fraction: float) -> bool:
    """Whether a memory's feedback is held out of training (a stable hash of its id,
    so a memory stays on its side of the split from one retraining to the next)."""
    digest = hashlib.sha256(memory_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < fraction


def fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    start: QualityModel,
    *,
    l2: float,
    iterations: int = 50,
) -> tuple[dict[str, float], float]:
    """Logistic regression by damped Newton steps, with a Gaussian prior centered
    on ``start``'s weights (strength ``l2``; the bias held a thousand times more
    loosely). Few examples move the model little; many move it as far as the
    evidence says.

    Returns:
        The weights by feature name, and the bias.
    """
    w0, b0 = start.vector()
    prior = np.concatenate([w0, [b0]])
    theta = prior.copy()
    # The bias is held far more loosely: a base rate the feedback sets.
    penalty = np.full(theta.shape[0], l2)
    penalty[-1] = l2 * 1e-3
    design = np.hstack([x, np.ones((x.shape[0], 1))])

    def objective(t: npt.NDArray[np.float64]) -> float:
        z = design @ t
        # log(1 + e^z) - y·z, computed without overflow.
        nll = float(np.sum(np.logaddexp(0.0, z) - y * z))
        return nll + 0.5 * float(np.sum(penalty * (t - prior) ** 2))

    current = objective(theta)
    for _ in range(iterations):
        p = _sigmoid(design @ theta)
        grad = design.T @ (p - y) + penalty * (theta - prior)
        hessian = (design * (p * (1.0 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian, grad)
        # Backtracking: a full Newton step can overshoot on nearly separable feedback.
        scale = 1.0
        while scale > 1e-6:
            candidate = theta - scale * step
            value = objective(candidate)
            if value <= current:
                break
            scale *= 0.5
        else:
            break
        theta, improvement, current = candidate, current - value, value
        if improvement < 1e-9 * max(1.0, abs(current)):
            break
    weights = {name: float(theta[i]) for i, name in enumerate(FEATURES)}
    return weights, float(theta[-1])


def evaluate(
    model: QualityModel, x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]
) -> TrainingMetrics:
    """Log loss, accuracy at 0.5 and ROC AUC of ``model`` on labeled rows."""
    p = np.clip(model.score(x), 1e-9, 1.0 - 1e-9)
    log_loss = float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))
    accuracy = float(np.mean((p >= 0.5) == (y >= 0.5)))
    return TrainingMetrics(
        examples=int(y.shape[0]), log_loss=log_loss, accuracy=accuracy, auc=_auc(p, y)
    )


def retrain(
    model: QualityModel,
    examples: Sequence[tuple[str, npt.NDArray[np.float64], bool]],
    *,
    feedback: int,
    now: datetime,
    config: QualityConfig,
) -> QualityModel:
    """Train a candidate on the training share of ``examples`` (``(memory id,
    features, helpful)``) and keep it only if it predicts the held-out share at
    least as well as ``model`` (lower log loss). Either way the run is recorded.

    Returns:
        The model to use from now on: the candidate, or ``model`` with the run noted.
    """
    train = [(x, y) for mid, x, y in examples if not is_holdout(mid, config.holdout_fraction)]
    held = [(x, y) for mid, x, y in examples if is_holdout(mid, config.holdout_fraction)]
    base = model.model_copy(update={"feedback_seen": feedback})

    def noted(run: TrainingRun) -> QualityModel:
        return base.model_copy(update={"last_training": run})

    if len(train) < config.min_train_examples or not held:
        return noted(
            TrainingRun(
                at=now,
                feedback=feedback,
                train_examples=len(train),
                accepted=False,
                reason=(
                    f"too little feedback: {len(train)} memories to train on and "
                    f"{len(held)} held out; training needs at least "
                    f"{config.min_train_examples} and 1 held out (nothing was trained)"
                ),
            )
        )
    x_train = np.vstack([x for x, _ in train])
    y_train = np.array([1.0 if y else 0.0 for _, y in train])
    x_held = np.vstack([x for x, _ in held])
    y_held = np.array([1.0 if y else 0.0 for _, y in held])
    weights, bias = fit(x_train, y_train, model, l2=config.l2)
    candidate = model.model_copy(update={"weights": weights, "bias": bias})
    new_metrics = evaluate(candidate, x_held, y_held)
    old_metrics = evaluate(model, x_held, y_held)
    accepted = new_metrics.log_loss <= old_metrics.log_loss
    run = TrainingRun(
        at=now,
        feedback=feedback,
        train_examples=len(train),
        accepted=accepted,
        reason=(
            "the retrained model predicts held-out feedback at least as well"
            if accepted
            else "the retrained model predicts held-out feedback worse; the old one stays"
        ),
        candidate=new_metrics,
        previous=old_metrics,
    )
    if not accepted:
        return noted(run)
    return candidate.model_copy(
        update={
            "version": model.version + 1,
            "trained_at": now,
            "feedback_seen": feedback,
            "last_training": run,
        }
    )


def _auc(p: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float | None:
    positives = p[y >= 0.5]
    negatives = p[y < 0.5]
    if positives.size == 0 or negatives.size == 0:
        return None
    # Mann-Whitney: the chance a random positive outscores a random negative.
    greater = (positives[:, None] > negatives[None, :]).sum()
    ties = (positives[:, None] == negatives[None, :]).sum()
    return float((greater + 0.5 * ties) / (positives.size * negatives.size))


def _sigmoid(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    out: npt.NDArray[np.float64] = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


__all__ = [
    "FEATURES",
    "PRIOR_BIAS",
    "PRIOR_WEIGHTS",
    "QualityAssessment",
    "QualityConfig",
    "QualityModel",
    "TrainingMetrics",
    "TrainingRun",
    "assess",
    "evaluate",
    "feedback_label",
    "fit",
    "is_holdout",
    "quality_features",
    "retrain",
]
