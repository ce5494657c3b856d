"""What a standing instruction governs: the scope it names.

A user tells an assistant how to answer a kind of request once ("Always include
version numbers when I ask about software dependencies") and expects the rule
to hold whenever such a request comes. The request ("which libraries does this
project use?") shares little with the rule's wording, most of which says what
to do, not when. The clause that says when ("when I ask about software
dependencies") is what such a request resembles, so a memory that names one is
embedded leaning toward it: :func:`toward_scope`, applied wherever the service
embeds a memory (``hippocampus.services.features``).

Pure text and vector arithmetic: no model, no I/O.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_SCOPE_CHARS", "scope", "toward_scope"]

MAX_SCOPE_CHARS = 200
"""The longest scope kept, in characters (a clause, not a passage)."""

# "when I ask about X", "whenever we discuss X", "if I'm asking for X",
# "each time I write about X": a condition on the asker's own requests.
_CONDITION = re.compile(
    r"\b(?:when(?:ever)?|if|each\s+time|every\s+time|any\s*time)\s+"
    r"(?:I|we)(?:'m|’m|\s+am|\s+are|'re|’re)?\s+"
    r"(?:ask(?:ing)?(?:\s+you)?|talk(?:ing)?|inquir(?:e|ing)|request(?:ing)?|discuss(?:ing)?|"
    r"chat(?:ting)?|writ(?:e|ing)|need\s+help|want\s+help|want\s+to\s+know|"
    r"look(?:ing)?\s+for|work(?:ing)?\s+on)\s+"
    r"(?:(?:about|for|on|regarding|with|into)\s+)?(?P<scope>[^.!?;\n]+)",
    re.IGNORECASE,
)
# "when it comes to X", "for (any) questions about X".
_TOPIC = re.compile(
    r"\b(?:when\s+it\s+comes\s+to|for\s+(?:any\s+|all\s+)?(?:questions|requests|answers)\s+"
    r"(?:about|on|regarding|involving))\s+(?P<scope>[^.!?;\n]+)",
    re.IGNORECASE,
)


# A sentence that tells the assistant how to answer from now on.
_RULE = re.compile(
    r"\b(?:always|never|from\s+now\s+on|make\s+sure\s+(?:to|you)|remember\s+to|"
    r"(?:do\s+not|don't|don’t)\s+\w+|please|you\s+(?:should|must|need\s+to|have\s+to)|"
    r"I(?:'d|’d|\s+would)?\s+(?:prefer|like|want)\s+(?:you\s+to|that\s+you|answers|responses))\b",
    re.IGNORECASE,
)
_LEADING_WORDS = 3
"""At most this many words before a condition ("From now on, when …") and it
leads its sentence."""
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
# Words that open a statement rather than a command: "When I ask about taxes, I
# get lost" tells nothing; "When I ask about taxes, cite the form" does.
_NOT_A_COMMAND = frozenset(
    """i we you he she it they this that these those there the a an my our your his
    her its their it's that's there's i'm we're you're""".split()
)
_FIRST_WORD = re.compile(r"\s*([a-z][a-z'’]*)")


def _commands(clause: str) -> bool:
    """Whether ``clause`` (what follows a leading condition's comma) reads as a
    command: it opens with a lower-case word that is no subject or article."""
    first = _FIRST_WORD.match(clause)
    return first is not None and first.group(1).replace("’", "'") not in _NOT_A_COMMAND


def _until_the_rule(clause: str) -> str:
    """A condition inside its sentence ("Always be brief, and when I ask about
    dates, always …") ends where the rule it governs begins: at the comma
    before the next rule word."""
    for comma in re.finditer(",", clause):
        if _RULE.search(clause, comma.end()):
            return clause[: comma.start()]
    return clause


def scope(text: str) -> str | None:
    """The scope ``text`` sets for a standing instruction, or ``None``.

    A scope is what follows a condition on the asker's requests ("when I ask
    about …", "whenever we discuss …", "when it comes to …", "for questions
    about …") in a sentence that gives a standing instruction ("always",
    "never", "from now on", "make sure to", "please", "you should", "I'd like
    you to" …, or a bare command after a condition that leads: "whenever I ask
    for a recipe, give metric units"), up to the end of that sentence (or the
    comma after a leading condition), at most :data:`MAX_SCOPE_CHARS`
    characters. Several such clauses are joined with "; " in order. The same
    condition in a sentence that instructs nothing ("it helps when it comes to
    testing", "when I ask about taxes, I get lost") is no scope.
    """
    found: list[str] = []
    for sentence in _SENTENCE.finditer(text):
        words = sentence.group()
        clauses = [*_CONDITION.finditer(words), *_TOPIC.finditer(words)]
        if not clauses:
            continue
        instructs = _RULE.search(words) is not None
        for match in sorted(clauses, key=lambda m: m.start()):
            clause = match.group("scope")
            if len(words[: match.start()].split()) <= _LEADING_WORDS:
                # The condition leads ("From now on, for questions about X, do Y"):
                # the rule follows its first comma, and may be a bare command
                # ("Whenever I ask for a recipe, give metric units").
                clause, comma, rest = clause.partition(",")
                if not (instructs or (comma and _commands(rest))):
                    continue
            elif instructs:
                clause = _until_the_rule(clause)
            else:
                continue
            clause = clause.strip(" ,:-\"'“”")
            if clause:
                found.append(clause)
    if not found:
        return None
    return "; ".join(found)[:MAX_SCOPE_CHARS].rstrip()


def toward_scope(
    head: npt.NDArray[np.float32], scope_vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """A standing instruction's vector: its text's and its scope's, averaged at
    unit length (the clause :func:`scope` finds). A request in the rule's scope
    then finds it about as readily as the scope alone would, and a question
    about the rule itself still does, as its own words count half."""
    a = head / (np.linalg.norm(head) or 1.0)
    b = scope_vector / (np.linalg.norm(scope_vector) or 1.0)
    both = a + b
    norm = float(np.linalg.norm(both))
    out: npt.NDArray[np.float32] = (both / norm if norm > 0.0 else a).astype(np.float32)
    return out
