"""Long content cut into passages the embedder can see whole.

A sentence-transformers model reads a bounded number of word pieces (256 for
all-MiniLM-L6-v2, about 1,000 characters of English) and silently drops the
rest, so one vector per memory makes everything past the first passage of a
long memory invisible to dense search. A long memory is embedded passage by
passage instead, and dense search scores it by its best passage.

Pure text arithmetic: no model, no I/O.
"""

from __future__ import annotations

import re

__all__ = ["passages"]

# Where a cut is best made, strongest first: a blank line, a line end, a sentence
# end, then any space.
_BREAKS = (
    re.compile(r"\n\s*\n"),
    re.compile(r"\n"),
    re.compile(r"(?<=[.!?:;])\s+"),
    re.compile(r"\s+"),
)


def passages(text: str, size: int, overlap: int = 0) -> list[tuple[int, int]]:
    """Cut ``text`` into passages of at most ``size`` characters.

    Each passage ends at the strongest break (paragraph, line, sentence, word) in
    its last half, and the next one starts ``overlap`` characters before that end
    (moved forward to a word start), so a sentence cut in two is still seen whole
    by one of them. Text no longer than ``size`` is one passage.

    Args:
        text: the content.
        size: the most characters in a passage (> 0).
        overlap: characters each passage repeats of the one before (< size / 2).

    Returns:
        ``(start, end)`` offsets into ``text``, in order, covering all of it.

    Raises:
        ValueError: ``size`` not positive, or ``overlap`` not below half of it.
    """
    if size <= 0:
        raise ValueError(f"passage size must be positive, got {size}")
    if not 0 <= overlap < size / 2:
        raise ValueError(f"overlap must be in [0, {size / 2}), got {overlap}")
    n = len(text)
    if n <= size:
        return [(0, n)]
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        limit = start + size
        if limit >= n:
            out.append((start, n))
            return out
        end = _cut(text, start + size // 2, limit)
        out.append((start, end))
        nxt = max(end - overlap, start + 1)
        if nxt < end:
            # Start the overlap at a word, not inside one.
            space = text.find(" ", nxt, end)
            nxt = space + 1 if space != -1 else end
        start = nxt


def _cut(text: str, low: int, high: int) -> int:
    """The end of a passage: just after the last strongest break in ``[low, high)``,
    or ``high`` when the window has no break at all."""
    window = text[low:high]
    for pattern in _BREAKS:
        breaks = list(pattern.finditer(window))
        if breaks:
            return low + breaks[-1].end()
    return high
