"""Questions about the present: the newer of two memories first.

When a newer memory reverses or replaces an older one on the same subject, it
supersedes it (``Memory.retrieval.superseded_by``, a ``SUPERSEDES`` edge; see
:mod:`hippocampus.services.judging`). The older one still answers questions about
the past ("why did we freeze Friday deploys in June?"), but a question about
the present ("can we deploy on Friday?", "what do we use now for CI?", "do we
still cache prices?") wants what holds now: there, each result ranks above
every result it supersedes, whatever their scores. Only the order of what
the search found changes: a superseding memory the search missed stays out
(the superseded result names it), and no result is pushed out for one.

A question is about the present when it says so ("still", "now",
"currently", "these days", "anymore" …), or asks in the present tense ("can
we …", "do we …", "what is …", "which … do we use") without a word that
places it in the past ("did", "was", "used to", "ever", "last year", "in
2023", a month's name). "Have we ever …" asks about the past.

Pure functions of their arguments.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

__all__ = ["asks_about_present", "present_first"]

_NOW = re.compile(
    r"\b(?:still|now|nowadays|currently|current|presently|these\s+days|today|"
    r"at\s+the\s+moment|at\s+present|any\s*more|any\s+longer|latest|up\s+to\s+date)\b",
    re.IGNORECASE,
)
# Present-tense questions: "can we …", "do we …", "is it …", "what is …",
# "which CI do we use", "how do we …".
_PRESENT_QUESTION = re.compile(
    r"^\s*(?:(?:can|may|should|must|shall|do|does|is|are|am)\b|"
    r"(?:what|which|who|where|how|why)(?:'s|'re|\b(?:\s+\w+){0,3}?\s+"
    r"(?:is|are|do|does|can|should|may|must)\b))",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?:did|didn't|was|wasn't|were|weren't|had|used\s+to|previously|originally|"
    r"formerly|at\s+first|back\s+(?:then|in|when)|ago|yesterday|earlier|ever|"
    r"last\s+(?:week|month|year|quarter|sprint|time)|(?:19|20)\d\d|"
    r"january|february|march|april|june|july|august|september|october|november|"
    r"december)\b",
    re.IGNORECASE,
)
_MAX_PASSES = 8
"""Rounds of lifting at most: one per link of the longest chain of memories
superseding one another that a result list holds, in practice two or three."""


def asks_about_present(query: str) -> bool:
    """Whether ``query`` asks about what holds now (see the module's doc)."""
    text = query.replace("\u2019", "'")
    if _PAST.search(text):
        return False
    return bool(_NOW.search(text) or _PRESENT_QUESTION.search(text))


def present_first(
    scores: Mapping[str, float], superseded_by: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """``scores`` with each memory lifted just above every memory it supersedes.

    Args:
        scores: the results' scores, by memory id.
        superseded_by: per result, the memories that supersede it.

    Returns:
        The scores, a superseding memory's raised to just above the best score
        of a memory it supersedes, where it was not above it already; the
        others as given. Memories named in ``superseded_by`` but absent from
        ``scores`` are left out.
    """
    out = dict(scores)
    for _ in range(_MAX_PASSES):
        moved = False
        for older in sorted(out, key=lambda mid: (-out[mid], mid)):
            for newer in superseded_by.get(older, ()):
                if newer in out and newer != older and out[newer] <= out[older]:
                    out[newer] = math.nextafter(out[older], math.inf)
                    moved = True
        if not moved:
            break
    return out
