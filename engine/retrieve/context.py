"""A context of concepts matched to the graph the way memories are (for associate).

A caller's context words are normalized as hub names are (case, spacing), and
each is also read by the concept extractor, so ``Migrations`` meets the
``migration`` trigger that ``migrations`` in a memory's text became. Paths are
then kept only where they hop through the context's own hubs or along
memory-to-memory edges: a hub nobody named (``Trigger:use``, ``Domain:team``)
links memories that merely share a common word, and carries nothing.

A memory that holds a hub the context names is associated with it outright,
however many memories share the hub: it is what the caller asked for. One
reached only through other memories needs the seed's multi-path gate: paths
from two context names, or one path whose edge weights multiply to at least
``min_path_strength`` (:meth:`Reach.passes`). Strength, by which results rank,
is measured as recall measures a walk: a hub passes on what reaches it divided
by its degree, so a memory holding a rare hub of the context ranks above one
holding a common hub, and among one hub's members the stronger edge first.

Pure functions over model objects; the service does the I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hippocampus.extract.base import Extraction
from hippocampus.model.association import MEMORY_NODE, Expansion, GraphPath

TAG_STRENGTH = 0.5
"""The weight of a memory's tag equal to a context word, as of an edge to a hub
of that name (a trigger's starting weight): divided, as a hub's is, by how
many memories carry the tag. A tag is held outright, as a hub is."""


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
    name, the paths kept, whether it holds a context hub (or tag) itself, and
    the strongest path's product of edge weights (``weight``)."""

    memory_id: str
    by_name: dict[str, float] = field(default_factory=dict)
    paths: list[GraphPath] = field(default_factory=list)
    held: bool = False
    weight: float = 0.0

    def add(self, name: str, strength: float) -> None:
        self.by_name[name] = max(self.by_name.get(name, 0.0), strength)

    def passes(self, min_path_strength: float) -> bool:
        """The gate: a memory holding a context hub passes; one reached through
        other memories needs paths from two context names or a path of
        ``min_path_strength`` (edge weights multiplied, hop damping included)."""
        return self.held or len(self.by_name) >= 2 or self.weight >= min_path_strength

    def expansion(self) -> Expansion:
        """Strength: the sum over context names of the best from each; anchors: how
        many context names reach it."""
        return Expansion(
            memory_id=self.memory_id,
            strength=sum(self.by_name.values()),
            anchors=len(self.by_name),
            paths=sorted(self.paths, key=lambda p: -p.strength),
        )


def through_context(
    expansion: Expansion, origin: Mapping[tuple[str, str], str], *, damping: float = 1.0
) -> Reach | None:
    """The paths of ``expansion`` whose every intermediate node is a memory or one
    of the context's hubs (``origin`` maps each to the context name it stands
    for), credited to the context names their anchors stand for; ``None`` when
    no path is left. ``damping``: the walk's per-hop factor, counted in each
    path's weight."""
    reach = Reach(expansion.memory_id)
    for p in expansion.paths:
        if all(s.kind == MEMORY_NODE or (s.kind, s.name) in origin for s in p.steps[:-1]):
            reach.add(origin.get((p.anchor.kind, p.anchor.name), p.anchor.name), p.strength)
            reach.paths.append(p)
            reach.held = reach.held or len(p.steps) == 1
            weight = p.anchor.strength * math.prod(s.weight * damping for s in p.steps)
            reach.weight = max(reach.weight, weight)
    return reach if reach.paths else None
