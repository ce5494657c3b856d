"""The extractor contract and the rules shared by every extractor."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Extraction:
    """What a text is about: hub-node names, normalized, in order of first mention.
    ``names``: the concepts that are proper names (a person, a place, a product,
    a work), written as such in the text; a subset of ``concepts``."""

    domains: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()
    names: tuple[str, ...] = ()


@runtime_checkable
class ConceptExtractor(Protocol):
    """Finds the domains, triggers and concepts of texts. Deterministic: the same
    text always gives the same extraction."""

    name: str

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One extraction per text, in order."""
        ...


def normalize_name(name: str) -> str:
    """The form hub names are stored in: lower case, single spaces, no edge punctuation."""
    return " ".join(name.casefold().split()).strip(" .,;:!?\"'()[]{}")


def unique_names(names: Iterable[str], limit: int) -> tuple[str, ...]:
    """Normalized, de-duplicated, first-mention order, at most ``limit``."""
    seen: dict[str, None] = {}
    for raw in names:
        name = normalize_name(raw)
        if name and len(name) <= 100 and name not in seen:
            seen[name] = None
            if len(seen) >= limit:
                break
    return tuple(seen)


def names_among(concepts: Iterable[str], names: Iterable[str]) -> tuple[str, ...]:
    """The ``concepts`` that are among ``names``, in the concepts' order."""
    known = set(names)
    return tuple(c for c in concepts if c in known)


def merge_given(
    extracted: Extraction,
    *,
    domains: Sequence[str] | None,
    triggers: Sequence[str] | None,
    concepts: Sequence[str] | None,
    limit: int = 50,
) -> Extraction:
    """Caller-given values win: a field the caller gave replaces the extracted one.
    A given concept is a name when the extraction found it as one."""
    final = unique_names(concepts, limit) if concepts is not None else extracted.concepts
    return Extraction(
        domains=unique_names(domains, limit) if domains is not None else extracted.domains,
        triggers=unique_names(triggers, limit) if triggers is not None else extracted.triggers,
        concepts=final,
        names=names_among(final, extracted.names),
    )
