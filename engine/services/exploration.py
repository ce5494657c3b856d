"""Exploring the graph: the memories a set of concepts is associated with, and
the graph around a memory or a hub, for drawing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from hippocampus.errors import InvalidInputError, NotFoundError
from hippocampus.extract import unique_names
from hippocampus.model import (
    MEMORY_NODE,
    Anchor,
    Edge,
    ExpandParams,
    Expansion,
    GraphPath,
    HubKind,
    HubMatch,
    Memory,
    RecallFilters,
    Tier,
    target_kind,
)
from hippocampus.retrieve.config import DEFAULT_RECIPE
from hippocampus.retrieve.context import TAG_STRENGTH, Reach, context_forms, through_context
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.features import TextFeatures
from hippocampus.services.recall import search_config

_ASSOCIATE_REACH = 1000
"""How many of a context hub's members associate follows (strongest edges
first), and how many memories its walk returns: enough for every sort to choose
from, bounded as a hub visit must be."""
ASSOCIATE_SORTS = ("strength", "confidence")
"""Orders :meth:`Hippocampus.associate` offers: path strength (default) or the
memory's confidence (the seed's)."""


class Association(BaseModel):
    """A memory found by :meth:`Hippocampus.associate`, and why."""

    memory: Memory
    strength: float
    anchors: int
    paths: list[GraphPath]


class Associations(BaseModel):
    """What :meth:`Hippocampus.associate` found, best first, and what it could not
    follow (a concept naming nothing, a hub too common to walk)."""

    results: list[Association]
    warnings: list[str] = []


class GraphNode(BaseModel):
    id: str
    kind: str
    label: str
    confidence: float | None = None


class Subgraph(BaseModel):
    """Nodes and edges around a center, for drawing."""

    center: str
    nodes: list[GraphNode]
    edges: list[Edge]


class ExplorationService:
    """Associating memories with concepts and drawing the graph.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        features: embeds the context names that tags are matched by.
    """

    def __init__(self, context: Context, checks: Checks, features: TextFeatures) -> None:
        self._context = context
        self._checks = checks
        self._features = features

    def associate(
        self,
        collection: str,
        context: Sequence[str],
        *,
        min_path_strength: float = 0.5,
        max_depth: int = 3,
        limit: int = 10,
        filters: RecallFilters | None = None,
        sort: str = "strength",
    ) -> Associations:
        """Memories associated with a set of concepts (the seed's
        retrieveAssociatedInsights): the memories that hold a hub (or tag) the
        concepts name, and those reached from them through other memories that
        pass the multi-path gate: paths from at least two of the concepts, or one
        path whose edge weights multiply to ``min_path_strength``. Strength is
        measured as recall's walk measures it: a hub passes on 1/degree of what
        reaches it (see :mod:`hippocampus.retrieve.context`).

        Args:
            sort: ``strength`` (default: the strongest connection to the context
                first) or ``confidence`` (the seed's order: the memory's own
                confidence first, path strength breaking ties). Either way the
                ``limit`` best are chosen from everything that passed the gate.

        Returns:
            The associations, and warnings: a concept that names no hub and no
            tag, a hub too common to walk.

        Raises:
            InvalidInputError: no concept given, or a bad depth, limit or sort.
        """
        names = self._checked_context(collection, context, max_depth, limit, sort)
        # The context is matched as memories are extracted: by name and by the
        # extractor's forms, to hubs of every kind; and to memories' tags.
        forms = context_forms(names, self._context.extractor.extract_many(list(names)))
        base = filters or RecallFilters()
        params = search_config(DEFAULT_RECIPE).expand.model_copy(
            # The caller named these hubs: each is walked however common, up to
            # the ceiling that bounds what one hub visit reads.
            update={
                "max_depth": max_depth,
                "hub_min_factor": 0.0,
                "hub_fanout": _ASSOCIATE_REACH,
                "max_results": _ASSOCIATE_REACH,
            }
        )
        warnings: list[str] = []
        matched = self._context.store.match_hubs(collection, list(forms))
        reached = self._walk_hubs(collection, matched, forms, params, base, warnings)
        tagged = self._add_tagged(collection, names, base, reached)
        named = {forms[h.name] for h in matched} | tagged
        generic: frozenset[str] = getattr(self._context.extractor, "generic", frozenset())
        warnings += [
            f"{name!r} names no hub and no tag in this collection"
            + (" (a word this common is no hub)" if name in generic else "")
            for name in names
            if name not in named
        ]
        ranked, memories = self._ranked(collection, reached, min_path_strength, limit, sort)
        return Associations(
            results=[
                Association(
                    memory=memories[e.memory_id],
                    strength=e.strength,
                    anchors=e.anchors,
                    paths=e.paths[:3],
                )
                for e in ranked
                if e.memory_id in memories
            ],
            warnings=warnings,
        )

    def _checked_context(
        self, collection: str, context: Sequence[str], max_depth: int, limit: int, sort: str
    ) -> tuple[str, ...]:
        """The context's names, once the collection, the names, the depth, the
        limit and the sort pass."""
        self._checks.check_collection(collection)
        names = unique_names(context, 50)
        if not names:
            raise InvalidInputError("give at least one concept", field="context")
        if not 1 <= max_depth <= 3:
            raise InvalidInputError("max_depth is 1-3", field="max_depth")
        if not 1 <= limit <= self._context.limits.max_recall_limit:
            raise InvalidInputError(
                f"limit is 1-{self._context.limits.max_recall_limit}", field="limit"
            )
        if sort not in ASSOCIATE_SORTS:
            raise InvalidInputError(f"sort is one of {', '.join(ASSOCIATE_SORTS)}", field="sort")
        return names

    def _walk_hubs(
        self,
        collection: str,
        matched: Sequence[HubMatch],
        forms: Mapping[str, str],
        params: ExpandParams,
        base: RecallFilters,
        warnings: list[str],
    ) -> dict[str, Reach]:
        """How the context reaches each memory from the hubs it names: each hub
        walked but one too common to walk (said in ``warnings``)."""
        hubs = []
        for hub in matched:
            if params.max_hub_degree is not None and hub.degree > params.max_hub_degree:
                warnings.append(
                    f"{hub.kind}:{hub.name} links {hub.degree} memories, more than the "
                    f"{params.max_hub_degree} a walk follows: left out"
                )
            else:
                hubs.append(hub)
        reached: dict[str, Reach] = {}
        if hubs:
            origin = {(h.kind, h.name): forms[h.name] for h in hubs}
            for e in self._context.store.expand(
                collection,
                [Anchor(kind=h.kind, name=h.name) for h in hubs],
                params=params,
                filters=base,
            ):
                if (kept := through_context(e, origin, damping=params.damping)) is not None:
                    reached[e.memory_id] = kept
        return reached

    def _ranked(
        self,
        collection: str,
        reached: Mapping[str, Reach],
        min_path_strength: float,
        limit: int,
        sort: str,
    ) -> tuple[list[Expansion], dict[str, Memory]]:
        """The ``limit`` best of what passed the gate, in the ``sort`` order, with
        their memories."""
        passed = sorted(
            (r for r in reached.values() if r.passes(min_path_strength)),
            key=lambda r: (-r.expansion().strength, r.memory_id),
        )
        ranked = [r.expansion() for r in passed]
        if sort == "strength":
            ranked = ranked[:limit]
        memories = self._context.store.get_memories(collection, [e.memory_id for e in ranked])
        if sort == "confidence":
            ranked = sorted(
                (e for e in ranked if e.memory_id in memories),
                key=lambda e: (
                    -memories[e.memory_id].retrieval.confidence,
                    -e.strength,
                    e.memory_id,
                ),
            )[:limit]
        return ranked, memories

    def _add_tagged(
        self,
        collection: str,
        names: Sequence[str],
        filters: RecallFilters,
        reached: dict[str, Reach],
    ) -> set[str]:
        """Credit each context name to the memories tagged with it, as a hub's
        members are credited: :data:`TAG_STRENGTH` divided by how many carry the
        tag (tags are not hubs: no path is drawn for them). Returns the names
        some memory is tagged with."""
        vector = self._features.embed_query(" ".join(names))
        if vector is None:
            return set()
        found: set[str] = set()
        for name in names:
            tagged = filters.model_copy(update={"tags": [name]})
            hits = self._context.store.search_vectors(
                collection,
                vector,
                model=self._context.embedder.name,
                k=self._context.limits.max_recall_limit,
                filters=tagged,
            )
            for memory_id, _ in hits:
                reach = reached.setdefault(memory_id, Reach(memory_id))
                reach.add(name, TAG_STRENGTH / len(hits))
                reach.held = True
            if hits:
                found.add(name)
        return found

    def subgraph(
        self, collection: str, center: str, *, depth: int = 1, max_nodes: int = 200
    ) -> Subgraph:
        """The graph around a memory (its id) or a hub (``Kind:name``, e.g.
        ``Concept:connection pool``), breadth first, for drawing.

        Raises:
            NotFoundError: no such memory or hub.
            InvalidInputError: a bad depth or node cap.
        """
        self._checks.check_collection(collection)
        if not 1 <= depth <= 3:
            raise InvalidInputError("depth is 1-3", field="depth")
        if not 1 <= max_nodes <= 2000:
            raise InvalidInputError("max_nodes is 1-2000", field="max_nodes")
        start = self._node_of(collection, center)
        nodes: dict[tuple[str, str], None] = {start: None}
        edges: dict[tuple[str, str, str], Edge] = {}
        frontier = [start]
        # A drawing shows a hub's strongest members however common the hub is:
        # no degree ceiling (each call walks one hub and keeps at most
        # max_nodes of its members).
        fanout = ExpandParams(
            max_depth=1,
            hub_fanout=max_nodes,
            frontier=max_nodes,
            hub_degree_penalty=False,
            max_hub_degree=None,
            damping=1.0,
            max_results=max_nodes,
        )
        all_tiers = RecallFilters(tiers=list(Tier))
        for _ in range(depth):
            reached: list[tuple[str, str]] = []
            for kind, name in frontier:
                if kind == MEMORY_NODE:
                    for edge in self._context.store.edges_of(collection, name):
                        other = (target_kind(edge.type), edge.target)
                        edges[(edge.type.value, edge.source, edge.target)] = edge
                        reached.append(other)
                else:
                    for e in self._context.store.expand(
                        collection, [Anchor(kind=kind, name=name)], params=fanout, filters=all_tiers
                    ):
                        step = e.paths[0].steps[0]
                        edge = Edge(
                            source=e.memory_id, type=step.type, target=name, weight=step.weight
                        )
                        edges[(edge.type.value, edge.source, edge.target)] = edge
                        reached.append((MEMORY_NODE, e.memory_id))
            frontier = []
            for node in reached:
                if node not in nodes and len(nodes) < max_nodes:
                    nodes[node] = None
                    frontier.append(node)
        memory_ids = [name for kind, name in nodes if kind == MEMORY_NODE]
        memories = self._context.store.get_memories(collection, memory_ids)
        kept = [
            e
            for e in edges.values()
            if (MEMORY_NODE, e.source) in nodes and (target_kind(e.type), e.target) in nodes
        ]
        return Subgraph(
            center=f"{start[0]}:{start[1]}",
            nodes=[
                GraphNode(
                    id=f"{kind}:{name}",
                    kind=kind,
                    label=(memories[name].content[:80] if name in memories else name)
                    if kind == MEMORY_NODE
                    else name,
                    confidence=memories[name].retrieval.confidence if name in memories else None,
                )
                for kind, name in nodes
            ],
            edges=kept,
        )

    def _node_of(self, collection: str, center: str) -> tuple[str, str]:
        kind, sep, name = center.partition(":")
        if sep and kind in {k.value for k in HubKind}:
            if any(h.kind == kind for h in self._context.store.match_hubs(collection, [name])):
                return (kind, name)
            raise NotFoundError(f"no {kind} {name!r} in this collection")
        if sep and kind == MEMORY_NODE and self._context.store.get_memories(collection, [name]):
            return (MEMORY_NODE, name)  # a node id as /graph gives it: Memory:<id>
        if not self._context.store.get_memories(collection, [center]):
            raise NotFoundError(f"no memory {center!r} in this collection")
        return (MEMORY_NODE, center)
