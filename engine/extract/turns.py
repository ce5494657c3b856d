"""A conversation turn's speaker label, left out of what is embedded and read.

Chat transcripts open each turn with its speaker: "User: I'm trying to…",
"Assistant: Of course! …" (the sanitizer stores a leading "Assistant:" as
``[role marker removed]``). The label says who spoke, which a memory's
``speaker`` field keeps, and nothing about what was said; yet the embedder
reads it as part of the text, so every turn of one side shares a few words of
meaning, and a short turn is pulled toward its side's other turns more than
toward what it says. On beam-100k's chats, dense search's R@10 is 0.569 with
the labels and 0.582 without. The extractor reads the label too: "user" and
"role marker" become concepts that link every turn of one side, hubs through
which the graph walk spreads a little credit to all of them.

So the service embeds a memory's content, and extracts its concepts, without a
leading role label (:func:`said`, applied wherever it embeds or reads a memory,
``hippocampus.services.features``). The stored content keeps it, and lexical
search still reads it. Only role words count as labels: "Error:" or "Note:"
open content, not a turn.

Pure text: no model, no I/O.
"""

from __future__ import annotations

import re

from hippocampus.extract.sanitize import ROLE_PLACEHOLDER

__all__ = ["said"]

_LABEL = re.compile(
    r"\A\s*(?:(?:user|assistant|system|human|ai|bot|agent)[ \t]*:|"
    + re.escape(ROLE_PLACEHOLDER)
    + r")[ \t]*",
    re.IGNORECASE,
)


def said(text: str) -> str:
    """``text`` without a leading speaker label ("User:", "Assistant:", the
    sanitizer's role placeholder); as it is where it has none, or where nothing
    follows the label."""
    match = _LABEL.match(text)
    if match is None or not text[match.end() :].strip():
        return text
    return text[match.end() :]
