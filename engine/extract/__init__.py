"""Extraction of what a memory is about: concepts, domains, triggers.

Beside it, the text rules of memory hygiene: the quality gate
(:mod:`~hippocampus.extract.quality`), duplicates and conflicts
(:mod:`~hippocampus.extract.dedup`), sanitizing (:mod:`~hippocampus.extract.sanitize`) and
record documents (:mod:`~hippocampus.extract.records`).
"""

from __future__ import annotations

import logging

from hippocampus.errors import ConfigError
from hippocampus.extract.base import (
    ConceptExtractor,
    Extraction,
    merge_given,
    normalize_name,
    unique_names,
)
from hippocampus.extract.simple import KeywordConceptExtractor
from hippocampus.extract.spacy_extractor import SpacyConceptExtractor

logger = logging.getLogger(__name__)


def make_extractor(*, fallback: bool = True) -> ConceptExtractor:
    """spaCy when its model is installed; else, with ``fallback``, keywords."""
    try:
        return SpacyConceptExtractor()
    except ConfigError as e:
        if not fallback:
            raise
        logger.warning("spaCy unavailable (%s); extracting keywords instead", e)
        return KeywordConceptExtractor()


__all__ = [
    "ConceptExtractor",
    "Extraction",
    "KeywordConceptExtractor",
    "SpacyConceptExtractor",
    "make_extractor",
    "merge_given",
    "normalize_name",
    "unique_names",
]
