"""A dependency-free extractor: word bigrams and keywords. Used where spaCy's
model is not installed; coarser than :class:`SpacyConceptExtractor`."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from engine.extract.base import Extraction, unique_names
from engine.extract.domains import domains_for

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-]*[A-Za-z0-9+#]|[A-Za-z]")
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves also get got use used using make made take takes took new one two
    """.split()
)


def _stem(word: str) -> str:
    """Plural to singular, roughly: ``queries`` → ``query``, ``caches`` → ``cache``."""
    if len(word) < 5 or not word.endswith("s") or word.endswith("ss"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    return word[:-1]


class KeywordConceptExtractor:
    """Concepts are adjacent content-word pairs and single content words;
    triggers the content words; domains from the cue vocabulary. Names are the
    concepts whose words are capitalized inside a sentence somewhere in the text."""

    name = "keywords"

    def __init__(self, *, max_concepts: int = 16, max_triggers: int = 10) -> None:
        self.max_concepts = max_concepts
        self.max_triggers = max_triggers

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> Extraction:
        found = list(_WORD.finditer(text))
        words = [_stem(m.group().casefold()) for m in found]
        content = [w for w in words if w not in STOP_WORDS and len(w) > 2]
        pairs = [f"{a} {b}" for a, b in itertools.pairwise(words) if a in content and b in content]
        named = {w for w, m in zip(words, found, strict=True) if _inside_capitalized(text, m)}
        concepts = unique_names(pairs + content, self.max_concepts)
        return Extraction(
            domains=domains_for(words),
            triggers=unique_names(content, self.max_triggers),
            concepts=concepts,
            names=tuple(c for c in concepts if all(w in named for w in c.split())),
        )


def _inside_capitalized(text: str, match: re.Match[str]) -> bool:
    """Whether a word is capitalized and not the first of its sentence (nor "I")."""
    word = match.group()
    if not word[:1].isupper() or word == "I":
        return False
    # What precedes it on its line, back to the last non-blank character.
    before = text[max(0, match.start() - 80) : match.start()].rstrip(" \t")
    return bool(before) and before[-1] not in ".!?\n"
