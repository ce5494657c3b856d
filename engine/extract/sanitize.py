"""Neutralizing text aimed at a model that will read a memory later.

Stored memories end up in prompts (a recall result pasted into an agent's
context, the "related knowledge" summary). Text that talks to that reader —
"ignore the previous instructions", a chat-template role marker, characters a
person cannot see — is turned into something inert before it is stored, and
the caller is told what changed. Ordinary prose, code and bug reports pass
through unchanged.

Pure functions: no I/O, deterministic.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

INSTRUCTION_PLACEHOLDER = "[instruction removed]"
ROLE_PLACEHOLDER = "[role marker removed]"

# Invisible characters that hide text from a human reviewer but not from a model:
# zero-width spaces and joiners, bidirectional overrides and isolates, word joiner
# and invisible operators, the byte-order mark, soft hyphens, and Unicode "tag"
# characters (U+E0000-U+E007F), which can spell out a whole hidden prompt.
_HIDDEN = re.compile(
    "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f]"
)
# Control characters other than tab and newline (carriage returns become newlines first).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# Chat-template tokens and role tags: they never belong in a memory.
_ROLE_TOKENS = re.compile(
    r"<\|\s*(?:im_start|start_header_id)\s*\|>[ \t]*(?:system|user|assistant|developer)?"
    r"(?:[ \t]*<\|\s*end_header_id\s*\|>)?"
    r"|<\|\s*(?:im_end|im_sep|system|user|assistant|endoftext|eot_id|end_header_id|"
    r"begin_of_text)\s*\|>"
    r"|\[/?INST\]|<</?SYS>>|</?s>"
    r"|</?\s*(?:system|assistant|developer|instructions?)\s*>",
    re.IGNORECASE,
)
# A line that opens with a reader role, as chat transcripts and prompt formats
# write them ("System: ...", "### Instruction:"). "User:" is left alone: bug
# reports quote users that way all the time.
_ROLE_LINE = re.compile(
    r"^(?P<lead>[ \t>*_#-]*)(?:#{1,4}[ \t]*)?(?:system|assistant|developer|instruction|"
    r"human)[ \t]*(?:prompt[ \t]*)?:",
    re.IGNORECASE | re.MULTILINE,
)
# Imperatives addressed to the model that will read the memory.
_INSTRUCTIONS = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|system|original|safety)\s+"
    r"(?:instructions?|prompts?|messages?|directions?|rules?|context|guidelines?)"
    r"|\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:above|before|you\s+were\s+told)"
    r"|\byou\s+are\s+now\s+(?:a|an|the|in|no\s+longer)\b"
    r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b"
    r"|\bnew\s+instructions?\s*:"
    r"|\b(?:reveal|print|show|repeat|output|leak)\s+(?:me\s+)?(?:your|the)\s+"
    r"(?:system\s+prompt|hidden\s+prompt|initial\s+prompt|instructions)"
    r"|\bdo\s+not\s+(?:tell|inform|warn)\s+the\s+user\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Sanitized:
    """The text as it will be stored, and what was changed to get there.

    Attributes:
        text: the neutralized text.
        changes: one human-readable line per kind of change; empty when the text
            was stored as given.
    """

    text: str
    changes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def sanitize_text(text: str) -> Sanitized:
    """Remove hidden characters and neutralize role markers and instructions aimed
    at a reading model.

    Hidden characters (zero-width, bidirectional controls, tag characters) and
    control characters other than newline and tab are removed; chat-template
    tokens are removed; a line opening with a reader role (``System:``,
    ``### Instruction:``) gets :data:`ROLE_PLACEHOLDER` instead of the label;
    instruction phrases ("ignore the previous instructions", "you are now a …")
    are replaced by :data:`INSTRUCTION_PLACEHOLDER`.
    """
    changes: list[str] = []
    out = text.replace("\r\n", "\n").replace("\r", "\n")
    out, hidden = _HIDDEN.subn("", out)
    out, controls = _CONTROL.subn("", out)
    if hidden:
        changes.append(
            f"removed {_count(hidden, 'hidden character')} (zero-width, "
            "bidirectional-control or tag characters)"
        )
    if controls:
        changes.append(f"removed {_count(controls, 'control character')}")
    out, tokens = _ROLE_TOKENS.subn("", out)
    out, lines = _ROLE_LINE.subn(lambda m: f"{m.group('lead')}{ROLE_PLACEHOLDER}", out)
    if tokens or lines:
        changes.append(f"neutralized {_count(tokens + lines, 'role marker')}")
    out, orders = _INSTRUCTIONS.subn(INSTRUCTION_PLACEHOLDER, out)
    if orders:
        changes.append(
            f"neutralized {_count(orders, 'instruction')} aimed at the model reading the memory"
        )
    return Sanitized(text=out.strip() if changes else text, changes=changes)


def has_control_characters(value: str) -> bool:
    """Whether ``value`` holds a control, format (zero-width, bidirectional),
    surrogate or line/paragraph-separator character: none belongs in an id."""
    return any(unicodedata.category(ch) in _ID_FORBIDDEN for ch in value)


def single_line(value: str) -> str:
    """``value`` sanitized with its whitespace runs (newlines included) collapsed to
    one space: for titles, labels and custom-field values."""
    return " ".join(sanitize_text(value).text.split())


_ID_FORBIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


__all__ = [
    "INSTRUCTION_PLACEHOLDER",
    "ROLE_PLACEHOLDER",
    "Sanitized",
    "has_control_characters",
    "sanitize_text",
    "single_line",
]
