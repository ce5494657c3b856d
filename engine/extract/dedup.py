"""Near-duplicates and contradictions between memories.

Two texts are duplicates when their embeddings are nearly the same (cosine
above 0.95), or, both being short, when they share most of their words (token
Jaccard above 0.7). Reversals are looked for first, in any pair compared: "use
connection pooling" and "don't use connection pooling" share every word but
one and sit close in embedding space, yet they contradict each other; "we
switched from Jenkins to GitHub Actions" shares one word with "we use Jenkins
for CI" and takes it back (:mod:`hippocampus.extract.reversal`). Such a pair is a
conflict, kept as two memories linked by ``CONFLICTS_WITH``. Alike texts that
deny different things without taking each other back ("don't forget to
restart the worker" and "restart the worker, not the queue") are kept apart,
neither merged nor in conflict. Numbers are compared too: "pin the driver to
5.1" and "pin the driver to 5.2" are two facts, never duplicates.

Pure functions of their arguments.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.extract.reversal import reversal
from hippocampus.model import Memory, NewMemory, Tier

_WORD = re.compile(r"[^\W_][\w'’.+#-]*[^\W_]|[^\W_]", re.UNICODE)
_CONTRACTION = re.compile(r"(\w+)n[’']t\b", re.IGNORECASE)
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}
NEGATIONS = frozenset({"not", "no", "never", "without", "avoid", "dont", "cannot", "nor"})
"""Words that negate what follows them."""
_AUXILIARIES = frozenset({"do", "does", "did"})
_SKIPPED_AFTER_NEGATION = frozenset(
    {"a", "an", "the", "to", "be", "been", "ever", "always", "really", "just", "any"}
)


class DedupConfig(BaseModel):
    """When a new memory duplicates or contradicts a stored one.

    Attributes:
        similarity: cosine above which two memories are duplicates.
        jaccard: token Jaccard above which two short memories are duplicates.
        short_tokens: texts of at most this many words count as short.
        candidates: stored memories compared per new memory (nearest by vector,
            and as many by words).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    similarity: float = Field(default=0.95, gt=0.0, le=1.0)
    jaccard: float = Field(default=0.7, gt=0.0, le=1.0)
    short_tokens: int = Field(default=64, ge=1)
    candidates: int = Field(default=5, ge=1, le=100)


class Verdict(StrEnum):
    UNIQUE = "unique"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class Comparison:
    """The verdict on a pair, and what it rests on: for a conflict, the words
    (stemmed) one text takes back from the other."""

    verdict: Verdict
    similarity: float | None
    jaccard: float
    contested: frozenset[str] = frozenset()


def tokens(text: str) -> list[str]:
    """Words, case-folded, contractions opened (``don't`` → ``do not``), and the
    auxiliary of a negation dropped (``do not use`` and ``don't use`` → ``not use``)."""
    return list(_tokens(text))


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    # Cached: a new memory is compared with several candidates, often the same ones.
    opened = _CONTRACTION.sub(
        lambda m: f"{_CONTRACTED.get(m.group(1).lower(), m.group(1))} not", text
    )
    words = [w.casefold().replace("’", "'") for w in _WORD.findall(opened)]
    out: list[str] = []
    for i, word in enumerate(words):
        if word in _AUXILIARIES and i + 1 < len(words) and words[i + 1] in NEGATIONS:
            continue
        out.append("not" if word == "dont" else word)
    return tuple(out)


def negated_terms(words: Sequence[str]) -> frozenset[str]:
    """The words negations apply to: the first content word after each negation."""
    negated: set[str] = set()
    for i, word in enumerate(words):
        if word not in NEGATIONS:
            continue
        for follower in words[i + 1 : i + 4]:
            if follower in NEGATIONS or follower in _SKIPPED_AFTER_NEGATION:
                continue
            negated.add(follower)
            break
        else:
            negated.add(word)
    return frozenset(negated)


def _numbers(words: Sequence[str]) -> frozenset[str]:
    return frozenset(w for w in words if any(ch.isdigit() for ch in w))


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 1.0 for two empty sets."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def compare(
    new_text: str, other_text: str, similarity: float | None, config: DedupConfig
) -> Comparison:
    """Whether ``new_text`` duplicates or contradicts ``other_text``.

    Args:
        similarity: cosine of their embeddings, when both have one.
    """
    a, b = _tokens(new_text), _tokens(other_text)
    plain_a = {w for w in a if w not in NEGATIONS}
    plain_b = {w for w in b if w not in NEGATIONS}
    # Without the negations: the pair's overlap as if they agreed.
    overlap = jaccard(plain_a, plain_b)
    contested = reversal(new_text, other_text, short_words=config.short_tokens)
    if contested:
        return Comparison(Verdict.CONFLICT, similarity, overlap, contested)
    short = max(len(a), len(b)) <= config.short_tokens
    alike = (similarity is not None and similarity > config.similarity) or (
        short and overlap > config.jaccard
    )
    if not alike or negated_terms(a) != negated_terms(b) or _numbers(a) != _numbers(b):
        return Comparison(Verdict.UNIQUE, similarity, overlap)
    # Alike once negations are set aside, with the same negations: a duplicate only
    # if the words themselves (negations included) still pass.
    full = jaccard(set(a), set(b))
    if (similarity is not None and similarity > config.similarity) or (
        short and full > config.jaccard
    ):
        return Comparison(Verdict.DUPLICATE, similarity, full)
    return Comparison(Verdict.UNIQUE, similarity, full)


def merge_duplicate(memory: Memory, item: NewMemory, at: datetime, *, max_tags: int) -> Memory:
    """``memory`` after ``item`` was found to repeat it: one more duplicate, the
    item's conversation and tags appended (provenance), the higher importance,
    and an archived memory active again (it is relevant once more). A
    quarantined memory stays quarantined."""
    r = memory.retrieval
    conversations = list(r.conversation_ids)
    if item.conversation_id and item.conversation_id not in conversations:
        conversations.append(item.conversation_id)
    tags = list(memory.tags)
    for tag in item.tags:
        if tag not in tags and len(tags) < max_tags:
            tags.append(tag)
    tier = Tier.ACTIVE if memory.tier == Tier.ARCHIVED else memory.tier
    return memory.model_copy(
        update={
            "tags": tags,
            "importance": max(memory.importance, item.importance),
            "tier": tier,
            "updated_at": at,
            "retrieval": r.model_copy(
                update={"duplicates": r.duplicates + 1, "conversation_ids": conversations}
            ),
        }
    )


__all__ = [
    "NEGATIONS",
    "Comparison",
    "DedupConfig",
    "Verdict",
    "compare",
    "jaccard",
    "merge_duplicate",
    "negated_terms",
    "tokens",
]
