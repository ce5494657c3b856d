"""A memory's edges to the hubs it names, at their starting weights."""

from __future__ import annotations

from datetime import datetime

from hippocampus.extract import Extraction
from hippocampus.model import HUB_EDGE, Edge, HubKind
from hippocampus.model.memory import RetrievalMeta

MEMBERSHIP_WEIGHT = 0.5
"""Starting weight of a memory's edges to its domains and triggers. Below the
associative gate's 0.5 once damped, so one shared hub alone never surfaces a
memory; use and co-retrieval raise it."""
CONCEPT_WEIGHT = 0.4
"""Starting weight of a memory's edge to a concept that is a common phrase
("connection pool", "verse tragedy")."""
NAME_WEIGHT = 0.8
"""Starting weight of a memory's edge to a concept that is a proper name (a
person, a place, a product, a work): twice a common phrase's. A name says what
a memory is about more surely than a phrase, and two memories that name the
same rare thing are the bridge a multi-hop question crosses; so a walk through
a shared name is four times as strong as one through a shared phrase. Still, a
path through one shared name (0.8 × 0.8, at least halved by the hub's degree)
stays under the associative gate's 0.5."""


def hub_edges(memory_id: str, extraction: Extraction, at: datetime) -> list[Edge]:
    """A memory's edges to the domains, triggers and concepts ``extraction`` names,
    at their starting weights."""
    hubs = {
        HubKind.DOMAIN: extraction.domains,
        HubKind.TRIGGER: extraction.triggers,
        HubKind.CONCEPT: extraction.concepts,
    }
    proper = set(extraction.names)
    return [
        Edge(
            source=memory_id,
            type=HUB_EDGE[kind],
            target=name,
            weight=_membership_weight(kind, name in proper),
            created_at=at,
        )
        for kind, values in hubs.items()
        for name in values
    ]


def _membership_weight(kind: HubKind, proper: bool) -> float:
    if kind is not HubKind.CONCEPT:
        return MEMBERSHIP_WEIGHT
    return NAME_WEIGHT if proper else CONCEPT_WEIGHT


def retrieval_extraction(retrieval: RetrievalMeta) -> Extraction:
    """The hubs a memory's metadata names, as the extraction that made its edges
    (to make them again)."""
    return Extraction(
        domains=tuple(retrieval.domains),
        triggers=tuple(retrieval.triggers),
        concepts=tuple(retrieval.concepts),
        names=tuple(retrieval.names),
    )
