"""Recall results as a text block to put in a prompt.

::

    Related knowledge already captured:
    - [Bug Fix] Checkout page took 4 seconds (score: 0.87): The ORM issued one query per...
    - [Work Item] Customer says app is slow on mobile (score: 0.74): Customer reported...

    Total entries in domain: 12

Each line: the category, a title (a record's title, else the memory's first
sentence), the score (cosine similarity to the query where there is one, else
the fused score) and the start of the rest of the text. The footer counts the
collection's memories: a collection is the seed's domain (the scope a search
never leaves), so the seed's wording stands.

The block never contradicts the results it goes with: results it leaves out
(less similar than its bar) are counted on a line of their own, and "(nothing
related found)" is said only where the recall found nothing at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hippocampus.extract.records import document_title
from hippocampus.model import RecallHit

HEADER = "Related knowledge already captured:"
_TITLE_CHARS = 80
_SNIPPET_CHARS = 120
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_DESCRIPTION = "\n\nDescription:\n"


def context_summary(
    hits: Sequence[RecallHit], total: int, *, left_out: int = 0, min_score: float | None = None
) -> str:
    """The block for ``hits``, best first, ending with the collection's size.
    ``left_out``: how many more results the recall returned, less similar to the
    query than ``min_score``, the block's bar."""
    lines = [HEADER]
    if not hits and not left_out:
        lines.append("(nothing related found)")
    for hit in hits:
        title, rest = title_and_snippet(hit.memory.content)
        score = hit.similarity if hit.similarity is not None else hit.score
        line = f"- [{category_label(hit.memory.category)}] {title} (score: {score:.2f})"
        lines.append(f"{line}: {rest}" if rest else line)
    if left_out:
        bar = f" less similar than {min_score:.2f}" if min_score is not None else ""
        also = "more " if hits else ""
        noun = "result" if left_out == 1 else "results"
        lines.append(f"({left_out} {also}{noun}{bar} not shown)")
    lines.append("")
    lines.append(f"Total entries in domain: {total}")
    return "\n".join(lines)


def category_label(category: str) -> str:
    """``bug_fix`` → ``Bug Fix``."""
    return " ".join(w.capitalize() for w in re.split(r"[_\-\s]+", category) if w)


def title_and_snippet(content: str) -> tuple[str, str]:
    """A title and the start of the rest, each on one line and cut with "...".

    A record document gives its title and description; other text its first
    sentence (or line) and what follows.
    """
    record_title = document_title(content)
    if record_title is not None:
        _, _, after = content.partition(_DESCRIPTION)
        description = after.split("\n\n", 1)[0] if after else ""
        return _cut(record_title, _TITLE_CHARS), _cut(description, _SNIPPET_CHARS)
    text = content.strip()
    parts = _SENTENCE_END.split(text, maxsplit=1)
    rest = parts[1] if len(parts) > 1 else ""
    return _cut(parts[0], _TITLE_CHARS), _cut(rest, _SNIPPET_CHARS)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 3].rsplit(" ", 1)[0] or flat[: limit - 3]
    return head.rstrip(" ,;:") + "..."


__all__ = ["HEADER", "category_label", "context_summary", "title_and_snippet"]
