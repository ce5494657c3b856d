"""Extractions of recently seen texts, kept so that a text is read once.

A conversation's surfacing asks about its last few messages together at every
message; each message was read when it came in, so its extraction is kept here
and the recent messages' extractions are merged instead of reading them all
again (the searches' spaCy reads were about a fifth of a message's time).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from hippocampus.extract.base import ConceptExtractor, Extraction, names_among


class RecentExtractions:
    """An extractor's results for the last ``size`` distinct texts it read.

    Deterministic like the extractor it wraps: a text's extraction is the same
    whether it was kept or read afresh.

    Args:
        extractor: reads the texts not kept.
        size: how many texts' extractions are kept (least recently used go first).
        max_chars: texts longer than this are read but not kept, so that what is
            kept stays small (a conversation keeps its messages' first 2,000
            characters, and asks about those).
    """

    def __init__(
        self, extractor: ConceptExtractor, size: int = 2048, max_chars: int = 2000
    ) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.extractor = extractor
        self.size = size
        self.max_chars = max_chars
        self._kept: OrderedDict[str, Extraction] = OrderedDict()
        self._lock = threading.Lock()

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        """One extraction per text, in order; those not kept are read in one batch."""
        found: dict[str, Extraction] = {}
        with self._lock:
            for text in texts:
                hit = self._kept.get(text)
                if hit is not None:
                    self._kept.move_to_end(text)
                    found[text] = hit
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            read = self.extractor.extract_many(missing)
            found.update(zip(missing, read, strict=True))
            with self._lock:
                for text, extraction in zip(missing, read, strict=True):
                    if len(text) <= self.max_chars:
                        self._kept[text] = extraction
                        self._kept.move_to_end(text)
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return [found[t] for t in texts]

    def together(self, texts: Sequence[str]) -> Extraction:
        """What ``texts`` name together: their extractions merged in order of first
        mention, each name once, as many concepts and triggers as the extractor
        gives one text (its ``max_concepts`` / ``max_triggers``, where it has them),
        as reading them joined would."""
        items = self.extract_many(texts)
        concepts = _first(n for e in items for n in e.concepts)
        concepts = concepts[: getattr(self.extractor, "max_concepts", len(concepts))]
        triggers = _first(n for e in items for n in e.triggers)
        return Extraction(
            domains=_first(n for e in items for n in e.domains),
            triggers=triggers[: getattr(self.extractor, "max_triggers", len(triggers))],
            concepts=concepts,
            names=names_among(concepts, (n for e in items for n in e.names)),
        )


def _first(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def pieces(texts: Sequence[str], limit: int) -> list[str]:
    """The parts of ``texts`` that ``" ".join(texts)[:limit]`` keeps, text by text."""
    out: list[str] = []
    left = limit
    for text in texts:
        if out:
            left -= 1  # the joining space
        if left <= 0:
            break
        out.append(text[:left])
        left -= len(out[-1])
    return out
