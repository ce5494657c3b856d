"""The concept extractor, built the first time a text is extracted.

Loading spaCy's pipeline takes seconds. A ``hippo`` command that never reads a
text for its concepts (``stats``, ``export``, ``decay``, ``tiers``) should not
wait for it, as it does not wait for the embedding model.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Sequence

from hippocampus.extract.base import ConceptExtractor, Extraction
from hippocampus.extract.simple import KeywordConceptExtractor
from hippocampus.extract.spacy_extractor import DEFAULT_SPACY_MODEL, extractor_name


def _expected_name() -> str:
    """The name the built extractor will have: spaCy's when spaCy and its model
    are installed (found without loading them), else the keyword extractor's."""
    if importlib.util.find_spec("spacy") and importlib.util.find_spec(DEFAULT_SPACY_MODEL):
        return extractor_name(DEFAULT_SPACY_MODEL)
    return KeywordConceptExtractor.name


class LazyExtractor:
    """A :class:`ConceptExtractor` that builds the real one (``build``) on first use.

    Its ``name`` is known before: what ``build`` will make (and, once built, what
    it made).
    """

    def __init__(self, build: Callable[[], ConceptExtractor]) -> None:
        self._build = build
        self._built: ConceptExtractor | None = None
        self._lock = threading.Lock()
        self.name = _expected_name()

    @property
    def loaded(self) -> bool:
        """Whether the real extractor has been built."""
        return self._built is not None

    def _extractor(self) -> ConceptExtractor:
        with self._lock:
            if self._built is None:
                self._built = self._build()
                self.name = self._built.name
            return self._built

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        return self._extractor().extract_many(texts)
