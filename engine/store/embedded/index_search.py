"""Searches of the vector index: top ``k`` by cosine similarity for one query or
many, rescored with passages; similarities and crowding of given memories.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from hippocampus.dense import (
    CROWDING_NEIGHBOURS,
    CROWDING_SAMPLE,
    PASSAGE_MARGIN,
    VectorSample,
    crowding_of,
)
from hippocampus.model import RecallFilters
from hippocampus.store.embedded.index_ann import MAX_CANDIDATES, MIN_CANDIDATES
from hippocampus.store.embedded.index_filters import IndexFilters
from hippocampus.store.embedded.index_storage import (
    TIER_CODE,
    TIERS,
    Partition,
    Rows,
    similarities,
    top_k,
)
from hippocampus.store.records import Vector

logger = logging.getLogger(__name__)

SCAN_SHARE = 10
"""A search through the graph is for filters that pass at least one row in this
many; fewer are gathered and scanned exactly."""


class IndexSearch(IndexFilters):
    """Vector searches over the index's partitions, filtered by its slots."""

    def search(
        self,
        query: Vector,
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by cosine similarity to ``query`` among ``model``'s
        vectors that pass ``filters``; best first. With ``passages`` a memory scores
        the best similarity of its vector and its passages."""
        with self._lock.read():
            part = self._partitions.get(model)
            if part is None or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if q.shape[0] != part.dim:
                logger.warning(
                    "collection %s: a %d-d query cannot search %s's %d-d vectors",
                    self.collection,
                    q.shape[0],
                    model,
                    part.dim,
                )
                return []
            norm = float(np.linalg.norm(q))
            if norm == 0.0 or not np.isfinite(norm):
                return []
            q = q / np.float32(norm)
            hits = self._search(part, q, k, filters)
            return self._with_passages(model, part, q, k, filters, hits) if passages else hits

    def similarities(self, ids: Sequence[str], query: Vector, *, model: str) -> dict[str, float]:
        """The cosine similarity to ``query`` of each of ``ids``' own vector of
        ``model`` (those that have one), from the rows held here."""
        with self._lock.read():
            part = self._partitions.get(model)
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if part is None or q.shape[0] != part.dim:
                return {}
            norm = float(np.linalg.norm(q))
            if norm == 0.0 or not np.isfinite(norm):
                return {}
            found = [mid for mid in dict.fromkeys(ids) if self._model_of.get(mid) == model]
            rows = np.asarray([part.row(self._slot_of[mid]) for mid in found], dtype=np.intp)
            scores = similarities(part.vectors[rows], q / np.float32(norm))
            return dict(zip(found, scores.tolist(), strict=True))

    def crowding(self, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded each of ``ids``' neighbourhoods is among ``model``'s vectors
        (:func:`hippocampus.dense.crowding_of`): against all of them when there
        are no more than :data:`CROWDING_SAMPLE` (read in place, under the lock),
        else against an even sample of the rows, copied and drawn again after
        they change."""
        with self._lock.read():
            part = self._partitions.get(model)
            if part is None:
                return {}
            kept = self._samples.get(model)
            if part.n <= CROWDING_SAMPLE:
                self._samples.pop(model, None)
                sample = VectorSample(ids=part.ids, vectors=part.vectors[: part.n], total=part.n)
            elif kept is None or kept[0] is not part or kept[1] != part.changes:
                rows = np.linspace(0, part.n - 1, num=CROWDING_SAMPLE).astype(np.intp)
                sample = VectorSample(
                    ids=[part.ids[r] for r in rows.tolist()],
                    vectors=part.vectors[rows],
                    total=part.n,
                )
                # Readers may draw it side by side: the same sample, either kept.
                self._samples[model] = (part, part.changes, sample)
            else:
                sample = kept[2]
            found = [mid for mid in dict.fromkeys(ids) if self._model_of.get(mid) == model]
            rows = np.asarray([part.row(self._slot_of[mid]) for mid in found], dtype=np.intp)
            return crowding_of(found, part.vectors[rows], sample, CROWDING_NEIGHBOURS)

    def search_many(
        self,
        queries: npt.NDArray[np.float32],
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`search` for each row of ``queries``. With no filter but tiers, all
        rows are scored by one matrix product (a pass over the vectors serves every
        query); otherwise one search per row. Passages (with ``passages``) are
        searched per row."""
        with self._lock.read():
            rows = np.asarray(queries, dtype=np.float32)
            if rows.ndim != 2:
                rows = rows.reshape(1, -1)
            part = self._partitions.get(model)
            if part is None or k <= 0 or rows.shape[0] == 0:
                return [[] for _ in range(rows.shape[0])]
            if rows.shape[1] != part.dim:
                logger.warning(
                    "collection %s: %d-d queries cannot search %s's %d-d vectors",
                    self.collection,
                    rows.shape[1],
                    model,
                    part.dim,
                )
                return [[] for _ in range(rows.shape[0])]
            norms = np.linalg.norm(rows, axis=1)
            usable = (norms > 0.0) & np.isfinite(norms)
            norms[~usable] = 1.0
            unit: npt.NDArray[np.float32] = (rows / norms[:, None]).astype(np.float32)
            plain = self._allowed(filters) is None and filters.exclude_conversation_id is None
            if not plain or (part.ann is not None and part.ann.ready):
                first = self._first_candidates(part, unit, k, filters)
                each = [
                    self._search(part, unit[i], k, filters, first[i]) if usable[i] else []
                    for i in range(unit.shape[0])
                ]
                return self._many_with_passages(model, part, unit, k, filters, each, passages)
            n = part.n
            scores: npt.NDArray[np.float32] = part.vectors[:n] @ unit.T  # n x queries
            tier_ok = np.ones(len(TIERS), dtype=bool)
            if filters.tiers:
                tier_ok[:] = False
                tier_ok[[TIER_CODE[t] for t in filters.tiers]] = True
            if sum(part.tier_counts[c] for c in np.flatnonzero(tier_ok)) != n:
                scores[~tier_ok[part.tiers[:n]], :] = -np.inf
            ids = part.ids
            out: list[list[tuple[str, float]]] = []
            for i in range(unit.shape[0]):
                if not usable[i]:
                    out.append([])
                    continue
                column: npt.NDArray[np.float32] = np.ascontiguousarray(scores[:, i])
                top = top_k(column, k)
                found = np.clip(column[top], -1.0, 1.0)
                out.append(
                    [(ids[r], float(s)) for r, s in zip(top.tolist(), found.tolist(), strict=True)]
                )
            return self._many_with_passages(model, part, unit, k, filters, out, passages)

    def _many_with_passages(
        self,
        model: str,
        part: Partition,
        unit: npt.NDArray[np.float32],
        k: int,
        filters: RecallFilters,
        found: list[list[tuple[str, float]]],
        passages: bool,
    ) -> list[list[tuple[str, float]]]:
        if not passages or model not in self._passages:
            return found
        return [
            self._with_passages(model, part, unit[i], k, filters, hits) if hits else hits
            for i, hits in enumerate(found)
        ]

    def _with_passages(
        self,
        model: str,
        part: Partition,
        q: Vector,
        k: int,
        filters: RecallFilters,
        hits: list[tuple[str, float]],
    ) -> list[tuple[str, float]]:
        """``hits`` (the top ``k`` by vector) rescored with the memories' passages:
        each memory scores max(its vector's similarity, its best passage's less
        :data:`PASSAGE_MARGIN`). The
        top ``k`` by that maximum lie among the top ``k`` by vector and the top
        ``k`` by best passage, so those two lists are merged. Caller holds the read
        lock."""
        store = self._passages.get(model)
        if store is None or store.n == 0:
            return hits
        # A later passage counts for its memory less the margin (see PASSAGE_MARGIN).
        best = store.best(q, self._slot_mask(filters)) - PASSAGE_MARGIN
        scores = dict(hits)
        for memory_id, similarity in hits:
            slot = self._slot_of[memory_id]
            if slot < best.shape[0] and best[slot] > similarity:
                scores[memory_id] = float(best[slot])
        for slot in top_k(best, k).tolist():
            memory_id = store.id_of[slot]
            if memory_id in scores:
                continue
            row = part.row(slot)
            head = float(part.vectors[row] @ q) if row >= 0 else -np.inf
            scores[memory_id] = max(head, float(best[slot]))
        ranked = sorted(scores.items(), key=lambda item: -item[1])[:k]
        return [(memory_id, min(1.0, max(-1.0, s))) for memory_id, s in ranked]

    def _first_candidates(
        self, part: Partition, unit: npt.NDArray[np.float32], k: int, filters: RecallFilters
    ) -> Sequence[npt.NDArray[np.int64] | None]:
        """Per row of ``unit``, the graph's first candidates for it when the search
        goes through the graph (:meth:`_search_graph`), asked for all the rows in
        one call; ``None`` for rows the search serves otherwise."""
        ann = part.ann
        if ann is None or not ann.ready or unit.shape[0] < 2:
            return [None] * unit.shape[0]
        count = self._graph_count(part, k, self._tier_ok(filters), self._allowed(filters))
        if count is None:
            return [None] * unit.shape[0]
        return ann.candidates_many(unit, count)

    @staticmethod
    def _graph_count(
        part: Partition, k: int, tier_ok: npt.NDArray[np.bool_], allowed: set[int] | None
    ) -> int | None:
        """How many candidates a search through the graph asks for first; ``None``
        when the rows that pass the filters (tiers ``tier_ok``, slots ``allowed``)
        are few enough to scan exactly."""
        n = part.n
        passing = sum(part.tier_counts[c] for c in np.flatnonzero(tier_ok))
        if allowed is not None:
            passing = min(passing, len(allowed))
        # Rows that pass are scanned exactly when they are few (the gather of a
        # row costs about ten streamed, so a scan of n/10 gathered rows is cheap).
        if passing * SCAN_SHARE < n or passing < k:
            return None
        return min(max(MIN_CANDIDATES, 2 * k * n // max(passing, 1)), n)

    @staticmethod
    def _tier_ok(filters: RecallFilters) -> npt.NDArray[np.bool_]:
        tier_ok = np.ones(len(TIERS), dtype=bool)
        if filters.tiers:
            tier_ok[:] = False
            tier_ok[[TIER_CODE[t] for t in filters.tiers]] = True
        return tier_ok

    def _search(
        self,
        part: Partition,
        q: Vector,
        k: int,
        filters: RecallFilters,
        first: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[str, float]]:
        n = part.n
        tier_ok = self._tier_ok(filters)
        all_tiers_pass = sum(part.tier_counts[c] for c in np.flatnonzero(tier_ok)) == n
        allowed = self._allowed(filters)
        excluded: set[int] = set()
        if filters.exclude_conversation_id is not None:
            excluded = self._by_conversation.get(filters.exclude_conversation_id, set())

        if part.ann is not None and part.ann.ready:
            hits = self._search_graph(part, q, k, tier_ok, all_tiers_pass, allowed, excluded, first)
            if hits is not None:
                return hits
        rows: Rows | None = None
        if allowed is not None:
            if excluded:
                allowed = allowed - excluded
            rows = part.rows_of(np.fromiter(allowed, dtype=np.intp, count=len(allowed)))
            if not all_tiers_pass:
                rows = rows[tier_ok[part.tiers[rows]]]
            if rows.size == 0:
                return []
            # A row gathered costs about ten streamed by the dense product (measured
            # at 100k x 384), so gather only when under a tenth of the rows pass;
            # sorted rows gather faster.
            if rows.size * 10 < n:
                rows = np.sort(rows)
                scores = similarities(part.vectors[rows], q)
            else:
                scores = similarities(part.vectors[:n], q)[rows]
        else:
            # Unfiltered, the common case: one matrix product over the dense block;
            # masks are built only when some row actually fails.
            scores = similarities(part.vectors[:n], q)
            if not all_tiers_pass:
                scores[~tier_ok[part.tiers[:n]]] = -np.inf
            if excluded:
                gone = part.rows_of(np.fromiter(excluded, dtype=np.intp, count=len(excluded)))
                scores[gone] = -np.inf
        top = top_k(scores, k)
        scores = np.clip(scores[top], -1.0, 1.0)
        if rows is not None:
            top = rows[top]
        ids = part.ids
        return [(ids[r], float(s)) for r, s in zip(top.tolist(), scores.tolist(), strict=True)]

    def _search_graph(
        self,
        part: Partition,
        q: Vector,
        k: int,
        tier_ok: npt.NDArray[np.bool_],
        all_tiers_pass: bool,
        allowed: set[int] | None,
        excluded: set[int],
        first: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[str, float]] | None:
        """Top ``k`` through the partition's graph: its candidates (``first``, when
        asked for already), and the rows still waiting for it, scored exactly from
        the rows and filtered; ``None`` when an exact scan serves better (few rows
        pass the filters, or too few candidates passed them even at the widest
        search)."""
        ann = part.ann
        assert ann is not None
        n = part.n
        first_count = self._graph_count(part, k, tier_ok, allowed)
        if first_count is None:
            return None
        count = first_count
        waiting = np.fromiter(ann.staged, dtype=np.intp, count=len(ann.staged))
        while True:
            if first is None or count != first_count:
                first = ann.candidates(q, min(count, n))
            slots = np.concatenate([first, waiting])
            rows = part.rows_of(slots)
            if not all_tiers_pass:
                rows = rows[tier_ok[part.tiers[rows]]]
            if allowed is not None or excluded:
                keep = [
                    (allowed is None or s in allowed) and s not in excluded
                    for s in part.slot_of_row[rows].tolist()
                ]
                rows = rows[np.asarray(keep, dtype=bool)]
            rows = np.unique(rows)
            if rows.size >= k or count >= min(n, MAX_CANDIDATES):
                break
            count = min(4 * count, MAX_CANDIDATES)
        if rows.size < k and count < n:
            return None
        scores = similarities(part.vectors[rows], q)
        top = top_k(scores, k)
        found = np.clip(scores[top], -1.0, 1.0)
        ids = part.ids
        return [(ids[r], float(s)) for r, s in zip(rows[top].tolist(), found.tolist(), strict=True)]
