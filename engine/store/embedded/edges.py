"""The embedded store's graph (:class:`~hippocampus.store.roles.GraphRole`): the
walk from anchors over the in-memory graph, and edges read and written in SQLite."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from hippocampus.model import Edge, RecallFilters
from hippocampus.model.association import Anchor, ExpandParams, Expansion
from hippocampus.store.embedded import edge_rows, graph_sql, tables
from hippocampus.store.embedded.base import EmbeddedBase
from hippocampus.store.records import EdgeEnds

_EDGE_PAGE = 5_000  # rows per page of iter_edge_ends: plain tuples, cheap to hold
_SELECT_EDGES_OF = """
SELECT source, type, target, weight, co_occurrences, last_co_occurred, kind, created_at
FROM edges WHERE collection = :c AND source = :m
UNION ALL
SELECT target, type, source, weight, co_occurrences, last_co_occurred, kind, created_at
FROM edges WHERE collection = :c AND target = :m AND type = 'ASSOCIATED'
ORDER BY 2, 3
"""


class EmbeddedEdges(EmbeddedBase):
    """The walk over the in-memory graph, and edges in SQLite kept in step with it."""

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
        pass ``filters``, strongest first; see
        :meth:`~hippocampus.store.embedded.graph.CollectionGraph.expand` for the exact
        rules (per-anchor best paths, frontier and fan-out, tie-breaking)."""
        graph = self._graph(collection)
        return graph.expand(anchors, params, filters, self._index(collection), paths=paths)

    def edges_of(self, collection: str, memory_id: str) -> list[Edge]:
        """Edges leaving the memory, and ASSOCIATED edges reaching it (turned so that
        ``source`` is ``memory_id``); ordered by type, then target."""
        with self._reading("read edges") as conn:
            rows = conn.execute(_SELECT_EDGES_OF, {"c": collection, "m": memory_id}).fetchall()
        return [graph_sql.edge_of_row(row) for row in rows]

    def upsert_edges(self, collection: str, edges: Sequence[Edge]) -> None:
        """Create or overwrite edges (weights and counters as given).

        Hub nodes are created when absent. Edges whose source memory (or, for
        memory edges, target memory) does not exist are skipped, as are memory
        edges from a memory to itself.
        """
        rows = [row for edge in edges if (row := edge_rows.edge_row(collection, edge)) is not None]
        if not rows:
            return
        with self._write_lock:
            self._index(collection)
            with self._transaction("write edges") as conn:
                edge_rows.write_edges(conn, rows, sources_exist=False)
                # A walked edge given no date takes its memory's creation, or keeps
                # its own: read back what was stored.
                undated = [
                    r
                    for r in rows
                    if r.type in edge_rows.WALKED_TYPES
                    and r.created_at is None
                    and r.used_at is None
                ]
                stored = {
                    (r.source, r.type, r.target): row[0]
                    for r in undated
                    if (
                        row := conn.execute(
                            "SELECT used_at FROM edges WHERE collection = ? AND source = ?"
                            " AND type = ? AND target = ?",
                            (collection, r.source, r.type, r.target),
                        ).fetchone()
                    )
                    is not None
                }
            dated = [
                r._replace(used_at=stored[(r.source, r.type, r.target)])
                if r.created_at is None and r.used_at is None
                else r
                for r in rows
                if r.created_at is not None
                or r.used_at is not None
                or (r.source, r.type, r.target) in stored
            ]
            self._graphs[collection].put_edges(edge_rows.walked(dated))

    def iter_edges(self, collection: str) -> Iterator[Edge]:
        """Every edge of the collection, each ASSOCIATED edge once (from its smaller
        id), ordered by source, type, target.

        Streams in pages like :meth:`iter_memories`: an edge written while the
        iteration runs may or may not be seen.
        """
        after: tuple[str, str, str] | None = None
        while True:
            with self._reading("list edges") as conn:
                page = graph_sql.edge_page(conn, collection, after, tables.CHUNK)
            for row in page:
                yield graph_sql.edge_of_row(row)
            if len(page) < tables.CHUNK:
                return
            after = (page[-1][0], page[-1][1], page[-1][2])

    def iter_edge_ends(self, collection: str) -> Iterator[EdgeEnds]:
        """``(source, type, target, weight)`` of every edge, as :meth:`iter_edges`
        orders them; streamed in pages of plain rows."""
        after: tuple[str, str, str] | None = None
        while True:
            with self._reading("list edges") as conn:
                page = graph_sql.edge_ends_page(conn, collection, after, _EDGE_PAGE)
            yield from page
            if len(page) < _EDGE_PAGE:
                return
            after = (page[-1][0], page[-1][1], page[-1][2])
