"""The Neo4j store's edges: expansion from anchors along weighted edges (one
query, ``cypher/recall/expand.cypher``), reading and writing edges."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from neo4j import ManagedTransaction

from hippocampus.model import Edge, EdgeType, RecallFilters
from hippocampus.model.association import Anchor, ExpandParams, Expansion, GraphPath, PathStep
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import (
    PAGE,
    Neo4jConnection,
    one_list,
    one_statement,
    run_counted,
)
from hippocampus.store.neo4j.counts import Tally
from hippocampus.store.neo4j.graph_model import NODE_KINDS
from hippocampus.store.records import EdgeEnds

logger = logging.getLogger(__name__)


class Neo4jGraph(Neo4jConnection):
    """Expansion along edges, and the edges themselves."""

    def expand(
        self,
        collection: str,
        anchors: Sequence[Anchor],
        *,
        params: ExpandParams,
        filters: RecallFilters,
        paths: bool = True,
    ) -> list[Expansion]:
        """Walk weighted edges from the anchors and return the memories reached that
        pass ``filters``, strongest first, in one query (``cypher/recall/expand.cypher``,
        which states the rules: those of the embedded store, so both stores give the
        same candidates and strengths on the same graph).

        Anchors are merged by (kind, name), keeping the strongest; anchors of other
        kinds than Memory, Domain, Trigger and Concept, and unknown nodes, are
        ignored.
        """
        ordered = _merged_anchors(anchors)
        if not ordered:
            return []
        query = _expand_params(ordered, params, filters, paths)
        rows = self._read("expand", one_statement("recall/expand", query, collection))
        found = []
        for row in one_list(rows, "found"):
            if row["memory_id"] is None or _through_deleted(row["reached"]):
                # A node the walk reached was deleted while it ran (reads see
                # committed deletes at once): that memory is gone, or its path
                # no longer exists. The next recall walks the graph as it is.
                continue
            found.append(_expansion_of(row, ordered, paths))
        return found

    def iter_edges(self, collection: str) -> Iterator[Edge]:
        """Every edge of the collection, each ASSOCIATED edge once (from its smaller
        id), by source, type and target. Streams in pages of memories."""
        after = ""
        while True:
            page = self._read(
                "list edges",
                one_statement("memory/iter_edges", {"after": after, "limit": PAGE}, collection),
            )
            for row in page:
                for entry in row["edges"]:
                    yield convert.edge_of(row["source"], entry)
            if len(page) < PAGE:
                return
            after = page[-1]["source"]

    def iter_edge_ends(self, collection: str) -> Iterator[EdgeEnds]:
        """``(source, type, target, weight)`` of every edge, as :meth:`iter_edges`
        orders them; streams in pages of memories."""
        after = ""
        while True:
            page = self._read(
                "list edges",
                one_statement("memory/iter_edge_ends", {"after": after, "limit": PAGE}, collection),
            )
            for row in page:
                source = row["source"]
                for edge_type, target, weight in row["edges"]:
                    yield (source, edge_type, target, float(weight))
            if len(page) < PAGE:
                return
            after = page[-1]["source"]

    def edges_of(self, collection: str, memory_id: str) -> list[Edge]:
        """Edges leaving the memory, and ASSOCIATED edges reaching it (turned so that
        ``source`` is ``memory_id``); ordered by type, then target."""
        rows = self._read(
            "read edges", one_statement("memory/edges_of", {"id": memory_id}, collection)
        )
        return [convert.edge_of(memory_id, row) for row in rows]

    def upsert_edges(self, collection: str, edges: Sequence[Edge]) -> None:
        """Create or overwrite edges (weights and counters as given).

        Hub nodes are created when absent. Edges whose source memory (or, for
        memory edges, target memory) does not exist are skipped, as are memory
        edges from a memory to itself. An edge given no ``created_at`` keeps its
        own, or when new is dated by its memory's creation.
        """
        rows = convert.edge_rows(edges)
        if not rows:
            return

        def work(tx: ManagedTransaction) -> None:
            tally = Tally()
            upsert_edge_rows(tx, collection, rows, tally)
            tally.write(tx, collection)

        self._write("write edges", work)


def _merged_anchors(anchors: Sequence[Anchor]) -> list[Anchor]:
    """The anchors merged by (kind, name), keeping the strongest, in (kind, name)
    order; those of a kind that is not a node kind are left out."""
    merged: dict[tuple[str, str], Anchor] = {}
    for anchor in anchors:
        if anchor.kind not in NODE_KINDS:
            logger.debug("anchor kind %r is not a node kind; ignored", anchor.kind)
            continue
        key = (anchor.kind, anchor.name)
        held = merged.get(key)
        if held is None or anchor.strength > held.strength:
            merged[key] = anchor
    return sorted(merged.values(), key=lambda a: (a.kind, a.name))


def _expand_params(
    ordered: Sequence[Anchor], params: ExpandParams, filters: RecallFilters, paths: bool
) -> dict[str, Any]:
    """The parameters of ``recall/expand``: the anchors in order (a row names its
    anchor by its place among them), the walk's settings and the filters."""
    return {
        "anchors": [{"kind": a.kind, "name": a.name, "strength": a.strength} for a in ordered],
        "max_depth": params.max_depth,
        "damping": params.damping,
        "fanout": params.hub_fanout,
        "frontier": params.frontier,
        "penalty": params.hub_degree_penalty,
        "degree_mode": params.hub_degree_mode,
        "pivot": params.hub_degree_pivot,
        "min_factor": params.hub_min_factor,
        "max_hub_degree": params.max_hub_degree,
        "max_results": params.max_results,
        "paths": paths,
        **convert.filter_params(filters),
    }


def _expansion_of(row: Mapping[str, Any], ordered: Sequence[Anchor], paths: bool) -> Expansion:
    """A memory the walk reached, from its ``recall/expand`` row: its strength, its
    strongest anchor and, with ``paths``, the paths that reached it."""
    reached = row["reached"]
    strongest = min(reached, key=lambda r: (-r["strength"], r["anchor"]), default=None)
    walked = _paths_of(reached, ordered) if paths else []
    return Expansion(
        memory_id=row["memory_id"],
        strength=float(row["strength"]),
        anchors=len(reached),
        best=float(strongest["strength"]) if strongest else 0.0,
        best_anchor=ordered[strongest["anchor"]] if strongest else None,
        paths=walked,
    )


def _paths_of(reached: Sequence[Mapping[str, Any]], ordered: Sequence[Anchor]) -> list[GraphPath]:
    """The paths that reached a memory, strongest first (ties by anchor)."""
    ranked = sorted(reached, key=lambda r: (-r["strength"], r["anchor"]))
    return [
        GraphPath(
            anchor=ordered[r["anchor"]],
            steps=[
                PathStep(
                    type=EdgeType(s["type"]),
                    weight=s["weight"],
                    kind=s["kind"],
                    name=s["name"],
                )
                for s in r["steps"]
            ],
            strength=r["strength"],
        )
        for r in ranked
    ]


def _through_deleted(reached: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a path of an expansion row steps through a node deleted mid-walk
    (its name reads as null)."""
    return any(step["name"] is None for r in reached for step in r["steps"])


def upsert_edge_rows(
    tx: ManagedTransaction, collection: str, rows: Sequence[dict[str, Any]], tally: Tally
) -> None:
    """Run ``memory/upsert_edges`` on ``rows``, one statement per edge type, so
    that the server's counts of what each created are the edges (and hubs) of
    that type it added, for ``tally``."""
    # Sorted: concurrent writes to shared hubs take their locks in one order.
    for edge_type, batch in by_type(convert.lock_order(rows)):
        made = run_counted(tx, "memory/upsert_edges", collection, edges=batch)
        tally.created(edge_type, made)


def by_type(rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """``rows`` grouped by their ``type``, each group in the order given."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["type"], []).append(row)
    return list(groups.items())
