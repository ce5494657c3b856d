"""A context of concepts matched to the graph the way memories are (for associate).

A caller's context words are normalized as hub names are (case, spacing), and
each is also read by the concept extractor, so ``Migrations`` meets the
``migration`` trigger that ``migrations`` in a memory's text became. Paths are
then kept only where they hop through the context's own hubs or along
memory-to-memory edges: a hub nobody named (``Trigger:use``, ``Domain:team``)
links memories that merely share a common word, and carries nothing.

Pure functions over model objects; the service does the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from engine.extract.base import Extraction
from engine.model.association import MEMORY_NODE, Expansion, GraphPath

TAG_STRENGTH = 0.5
"""What a caller's tag equal to a context word adds to a memory's strength: as
much as the default ``min_path_strength``, so a tag alone is enough, as one
strong path is."""


def context_forms(names: Sequence[str], extractions: Sequence[Extraction]) -> dict[str, str]:
    """The hub names to look for, each with the context name it stands for: the
    (already normalized) name itself, then the triggers and concepts the extractor
    reads in it (its lemmas), first mention first. Domains the extractor infers
    (``migrations`` → ``database``) are left out: a broader word than the caller
    said; a domain the caller names is found by its own name."""
    forms: dict[str, str] = {}
    for name, extraction in zip(names, extractions, strict=True):
        for form in (name, *extraction.triggers, *extraction.concepts):
            forms.setdefault(form, name)
    return forms


@dataclass
class Reach:
    """How the context reaches one memory: the best strength from each context
    name, and the paths kept."""

    memory_id: str
    by_name: dict[str, float] = field(default_factory=dict)
    paths: list[GraphPath] = field(default_factory=list)

    def add(self, name: str, strength: float) -> None:
        self.by_name[name] = max(self.by_name.get(name, 0.0), strength)

    def expansion(self) -> Expansion:
        """Strength: the sum over context names of the best from each; anchors: how
        many context names reach it."""
        return Expansion(
            memory_id=self.memory_id,
            strength=sum(self.by_name.values()),
            anchors=len(self.by_name),
            paths=sorted(self.paths, key=lambda p: -p.strength),
        )


def through_context(expansion: Expansion, origin: Mapping[tuple[str, str], str]) -> Reach | None:
    """The paths of ``expansion`` whose every intermediate node is a memory or one
    of the context's hubs (``origin`` maps each to the context name it stands
    for), credited to the context names their anchors stand for; ``None`` when
    no path is left."""
    reach = Reach(expansion.memory_id)
    for p in expansion.paths:
        if all(s.kind == MEMORY_NODE or (s.kind, s.name) in origin for s in p.steps[:-1]):
            reach.add(origin.get((p.anchor.kind, p.anchor.name), p.anchor.name), p.strength)
            reach.paths.append(p)
    return reach if reach.paths else None
