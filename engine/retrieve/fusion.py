"""Fusion and diversity: pure functions over candidate lists, no store.

Each signal (dense similarity, lexical BM25, graph path strength) arrives as a
mapping from memory id to score; fusion turns them into one ranking.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hippocampus.lexical import STOP_WORDS
from hippocampus.retrieve.config import MAX_UNCORROBORATED


def ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1-based rank of each id by descending score (ties by id, for determinism)."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return {mid: i for i, (mid, _) in enumerate(ordered, start=1)}


def top(scores: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` best ids with their scores, best first (ties by id)."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]


def rrf(
    signals: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
) -> dict[str, float]:
    """Reciprocal rank fusion: ``sum over signals of weight / (k + rank)``.

    Scale-free, so signals with incomparable scores (cosine, BM25, path
    strength) combine without calibration. A signal missing from ``weights``
    counts with weight 0.
    """
    fused: dict[str, float] = {}
    for name, scores in signals.items():
        weight = weights.get(name, 0.0)
        if weight == 0.0:
            continue
        for mid, rank in ranks(scores).items():
            fused[mid] = fused.get(mid, 0.0) + weight / (k + rank)
    return fused


def max_normalized(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores divided by the largest (so the best is 1.0); non-positive scores become 0."""
    top = max(scores.values(), default=0.0)
    if top <= 0.0:
        return {mid: 0.0 for mid in scores}
    return {mid: max(0.0, s) / top for mid, s in scores.items()}


def weighted(
    signals: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
    *,
    normalize: Sequence[str] = (),
) -> dict[str, float]:
    """Weighted sum of signals; those named in ``normalize`` are first scaled by
    :func:`max_normalized` (for unbounded ones such as BM25). An id absent from a
    signal scores 0 there."""
    fused: dict[str, float] = {}
    for name, scores in signals.items():
        weight = weights.get(name, 0.0)
        if weight == 0.0:
            continue
        values = max_normalized(scores) if name in normalize else scores
        for mid, score in values.items():
            fused[mid] = fused.get(mid, 0.0) + weight * score
    return fused


@dataclass(frozen=True)
class Spread:
    """Where one signal's best scores for a query lie: the mean and standard
    deviation of its top scores, and the lowest of them (the floor below which a
    score is no evidence at all)."""

    mean: float
    std: float
    floor: float

    def z(self, score: float) -> float:
        """How many standard deviations ``score`` stands above the mean of the top
        (0.0 when the top has no spread)."""
        if self.std <= 0.0:
            return 0.0
        return (max(score, self.floor) - self.mean) / self.std


def spread(scores: Mapping[str, float], top: int) -> Spread | None:
    """The :class:`Spread` of the ``top`` best scores, ``None`` for fewer than 3."""
    best = sorted(scores.values(), reverse=True)[:top]
    if len(best) < 3:
        return None
    values = np.asarray(best, dtype=np.float64)
    return Spread(mean=float(values.mean()), std=float(values.std()), floor=float(values[-1]))


def calibrated(
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    *,
    lexical_weight: float,
    top: int = 20,
) -> dict[str, float]:
    """Dense and lexical evidence on one scale: cosine similarity units.

    Each memory scores its cosine similarity plus, when its BM25 score stands
    above the typical BM25 score of the query's best matches, that lead, measured
    in the lexical signal's own standard deviations and converted to cosine units
    by the dense signal's standard deviation (both over the ``top`` best of each
    signal), times ``lexical_weight``. A query whose words pick out a few memories
    (a rare name, a number) gives those a lead of several deviations; one whose
    words are everywhere gives nobody much. A memory without a similarity (found
    by text only, with no vector) counts the least similarity seen.

    A candidate that shares no word with the query scores 0 on the lexical
    signal, and counts so in its spread: when fewer than ``top`` candidates share
    a word with the query, the top holds zeros. So one of few matches for a rare
    word is never without a lead for want of a spread to measure it by: the only
    match among ``top`` leads by ``sqrt(top - 1)`` deviations, one of two equal
    matches by ``sqrt(top/2 - 1)``, and a memory with no word of the query passes
    it only when it is that much more similar.

    Args:
        dense: memory id → cosine similarity to the query.
        lexical: memory id → BM25 score.
        lexical_weight: how much a standard deviation of lexical lead is worth in
            standard deviations of similarity.
        top: how many of each signal's best scores measure its spread.

    Returns:
        memory id → fused score, for every id of either signal.
    """
    ids = list(dict.fromkeys([*dense, *lexical]))
    if not dense:
        return dict(max_normalized(dict(lexical)))
    d_spread = spread(dense, top)
    l_spread = spread({mid: lexical.get(mid, 0.0) for mid in ids}, top)
    lowest = min(dense.values())
    scale = lexical_weight * (d_spread.std if d_spread is not None else 0.0)
    fused: dict[str, float] = {}
    for mid in ids:
        score = dense.get(mid, lowest)
        if l_spread is not None and mid in lexical:
            score += scale * max(0.0, l_spread.z(lexical[mid]))
        fused[mid] = score
    return fused


def top_overlap(first: Mapping[str, float], second: Mapping[str, float], top: int = 10) -> float:
    """The share of ``first``'s ``top`` best ids that are among ``second``'s ``top``
    best (over the shorter list when one has fewer); 1.0 when either is empty,
    as nothing disagrees then."""
    size = min(top, len(first), len(second))
    if size == 0:
        return 1.0
    best_first = {mid for mid, _ in sorted(first.items(), key=lambda i: (-i[1], i[0]))[:size]}
    best_second = {mid for mid, _ in sorted(second.items(), key=lambda i: (-i[1], i[0]))[:size]}
    return len(best_first & best_second) / size


def corroboration(
    dense: Mapping[str, float], lexical: Mapping[str, float], *, top: int = 20, best: int = 3
) -> float | None:
    """How well similarity corroborates what the words found: the mean of the
    ``best`` lexical matches' similarities, in standard deviations of the
    ``top`` best similarities above their mean (:class:`Spread`). Around 0 or
    above when a model reads the query as the words do; several deviations
    below when the model finds other memories than the words (those matches
    then score as any memory does: a model gone weak, where the words are the
    better guide). ``None`` without lexical matches that have a similarity, or
    without a spread."""
    d = spread(dense, top)
    if d is None or d.std <= 0.0:
        return None
    ranked = sorted(lexical, key=lambda mid: (-lexical[mid], mid))[:best]
    zs = [(dense[mid] - d.mean) / d.std for mid in ranked if mid in dense]
    return sum(zs) / len(zs) if zs else None


def uncorroborated_lean(corroborated: float | None, threshold: float) -> float:
    """How many times further than ``threshold`` below 0 ``corroborated`` lies,
    between 1 and :data:`MAX_UNCORROBORATED`; 1 when it lies no further, is not
    known, or the threshold is 0 (off)."""
    if corroborated is None or threshold <= 0.0 or -corroborated <= threshold:
        return 1.0
    return min(MAX_UNCORROBORATED, -corroborated / threshold)


_TERM = re.compile(r"[^\W_]+(?:[.'’-][^\W_]+)*")
_CALENDAR = frozenset(
    """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday
    thursday friday saturday sunday today yesterday tomorrow""".split()
)


def specific_terms(query: str) -> int:
    """How many of the query's words name something exactly: numbers, versions and
    dates, calendar words, and capitalized words inside the sentence (names).

    Such words are matched best letter for letter, so the more a query has, the
    more its fusion leans on lexical evidence; a paraphrase has none and leans on
    similarity.
    """
    count = 0
    sentence_start = True
    for match in _TERM.finditer(query):
        word = match.group()
        exact = any(ch.isdigit() for ch in word) or word.lower() in _CALENDAR
        name = not sentence_start and word[:1].isupper() and re.split("['’]", word)[0] != "I"
        count += exact or name
        tail = query[match.end() : match.end() + 2]
        sentence_start = bool(tail) and tail[0] in ".!?"
    return count


FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
"""Words by which a query speaks of its asker."""
FIRST_PERSON_SPEAKERS = frozenset({"user", "human", "me"})
"""Speaker labels that stand for the person a conversation's assistant talks to:
the first person of a query names them."""
ASSISTANT_SPEAKERS = frozenset({"assistant"})
"""Speaker labels that stand for the assistant: the second person names them when
the query asks what it said or did (:data:`_TOLD_BY_YOU`)."""
ROLE_SPEAKERS = FIRST_PERSON_SPEAKERS | ASSISTANT_SPEAKERS
"""Speaker labels that name a role in a conversation rather than a person."""
# "What did you recommend", "the plan you suggested": the second person as the
# one who said or did something before. "Can you suggest" or "what would you
# recommend" asks for something now, and names nobody's earlier turns.
_TOLD_BY_YOU = re.compile(
    r"\b(?:did|had|have|has)\s+you\b"
    r"|\byou\s+(?:recommended|suggested|mentioned|said|told|advised|explained|proposed|"
    r"gave|described|outlined|shared|pointed|wrote|noted|listed|warned)\b",
    re.IGNORECASE,
)
# "Summarize how my project went", "a recap of what I tried": a summary asks for
# the whole story of a subject, told by both sides of the conversation; its
# first person says whose subject it is, not whose turns to read.
_SUMMARY = re.compile(
    r"\b(?:summar(?:y|ies|i[sz]e[sd]?|i[sz]ing)|recap|overview|sum\s+up)\b", re.IGNORECASE
)
_CAPITALIZED = re.compile(r"\b[A-Z][^\W_]*")


def _words(text: str) -> set[str]:
    """The case-folded words of ``text``, possessives also without their ending
    ("Caroline's" is also "caroline")."""
    words = {m.group().casefold() for m in _TERM.finditer(text)}
    return words | {re.split("['’]", w)[0] for w in words}


def could_name_speaker(query: str) -> bool:
    """Whether ``query`` has a word that could name a speaker: the first person, a
    conversation role ("the assistant", "the user"), or a capitalized word that is
    not a function word ("What", "Can", "I"); a cheap test before any speaker is
    looked up."""
    if _words(query) & (FIRST_PERSON | ROLE_SPEAKERS) or _TOLD_BY_YOU.search(query):
        return True
    return any(w.casefold() not in STOP_WORDS for w in _CAPITALIZED.findall(query))


def speakers_named(query: str, speakers: set[str]) -> set[str]:
    """The speakers among ``speakers`` that ``query`` names: by their label, whole
    words in any case ("what did Caroline say" names ``caroline``), by the
    first person when the label stands for the assistant's counterpart ("what did
    I decide" names ``user``) and the query does not ask for a summary ("summarize
    how my project went" names nobody: both sides told it), or by the second
    person as the one who said something before when it stands for the assistant
    ("what did you recommend" names ``assistant``; "can you recommend" names
    nobody)."""
    words = _words(query)
    named = {s for s in speakers if _words(s) and _words(s) <= words}
    if words & FIRST_PERSON and not _SUMMARY.search(query):
        named |= {s for s in speakers if s.casefold() in FIRST_PERSON_SPEAKERS}
    if _TOLD_BY_YOU.search(query):
        named |= {s for s in speakers if s.casefold() in ASSISTANT_SPEAKERS}
    return named


def lifted(direct: float, strength: float, best: float, *, weight: float, cap: float) -> float:
    """A direct score raised by graph evidence, ``weight`` × path strength, where
    the strongest single anchor's share (``best`` of ``strength``) lifts by at
    most ``cap``. One anchor can reorder near ties but never carry a memory past
    one that matches clearly better; each further anchor's path adds in full, so
    evidence that converges from several places still lifts what similarity
    missed."""
    single = min(weight * best, cap)
    return direct + single + weight * max(0.0, strength - best)


def seed_composite(similarity: float, quality: float, usefulness: float) -> float:
    """The seed's composite score: ``0.4·similarity + 0.3·quality + 0.3·usefulness``."""
    return 0.4 * similarity + 0.3 * quality + 0.3 * usefulness


def mmr(
    candidates: Sequence[str],
    relevance: Mapping[str, float],
    vectors: Mapping[str, npt.NDArray[np.float32]],
    *,
    lambda_: float,
    k: int,
) -> list[str]:
    """Maximal marginal relevance: pick ``k`` ids, each maximizing
    ``lambda·relevance − (1−lambda)·max cosine to those already picked``.

    Relevance is max-normalized first so it is on the cosine's scale; ties go to
    the earlier candidate. Vectors are compared at unit length, and only those
    of the dimension of the first candidate's that has one (a collection
    re-embedded part way holds two): a candidate without such a vector is never
    penalized for redundancy, nor makes others redundant.
    """
    order = list(dict.fromkeys(candidates))
    if not order or k <= 0:
        return []
    rel = max_normalized({c: relevance.get(c, 0.0) for c in order})
    given = {c: np.asarray(vectors[c], dtype=np.float32).reshape(-1) for c in order if c in vectors}
    size = next((v.shape[0] for v in given.values()), 0)
    have = [i for i, c in enumerate(order) if c in given and given[c].shape[0] == size]
    units = np.asarray([given[order[i]] for i in have])
    if have:
        norms = np.sqrt(np.vecdot(units, units))
        units = units / np.where(norms > 0.0, norms, 1.0)[:, None]
    # Pair by pair, not a BLAS product (see hippocampus.dense.crowding_of).
    sims = np.vecdot(units[:, None, :], units[None, :, :]) if have else np.empty((0, 0))
    row = np.full(len(order), -1)
    row[have] = np.arange(len(have))
    relevant = lambda_ * np.asarray([rel[c] for c in order], dtype=np.float64)
    # Each candidate's greatest similarity to those picked so far; -inf: none yet.
    redundancy = np.full(len(order), -np.inf)
    picked: list[int] = []
    while len(picked) < min(k, len(order)):
        score = relevant - (1.0 - lambda_) * np.where(np.isfinite(redundancy), redundancy, 0.0)
        score[picked] = -np.inf
        best = int(np.argmax(score))
        picked.append(best)
        if row[best] >= 0:
            redundancy[have] = np.maximum(redundancy[have], sims[row[best]])
    return [order[i] for i in picked]
