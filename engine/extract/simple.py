"""A dependency-free extractor: word bigrams and keywords. Used where spaCy's
model is not installed; coarser than :class:`SpacyConceptExtractor`, with the
same rules for what a hub is called (:mod:`hippocampus.extract.forms`) and which
word is which hub: a name is a concept, never a trigger; a generic word
(:data:`~hippocampus.extract.generic.GENERIC_WORDS`) is no hub alone; a word that is
a trigger is not also a one-word concept."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from hippocampus.extract.base import Extraction, unique_names
from hippocampus.extract.domains import domains_for
from hippocampus.extract.forms import singular
from hippocampus.extract.generic import GENERIC_WORDS

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
        words = [singular(m.group(), plural=True) for m in found]
        content = [w for w in words if w not in STOP_WORDS and len(w) > 2]
        pairs = [f"{a} {b}" for a, b in itertools.pairwise(words) if a in content and b in content]
        named = {w for w, m in zip(words, found, strict=True) if _inside_capitalized(text, m)}
        triggers = unique_names(
            (w for w in content if w not in named and w not in GENERIC_WORDS), self.max_triggers
        )
        single = set(triggers) | GENERIC_WORDS
        concepts = unique_names(
            (c for c in pairs + content if " " in c or c in named or c not in single),
            self.max_concepts,
        )
        return Extraction(
            domains=domains_for(words),
            triggers=triggers,
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
