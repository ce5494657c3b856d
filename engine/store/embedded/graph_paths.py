"""The paths of a walk of the in-memory graph: the best path from each anchor to
each memory returned, read back from the states the walk kept."""

from __future__ import annotations

import numpy as np

from hippocampus.model.association import GraphPath, PathStep
from hippocampus.store.embedded.graph_layout import EDGE_TO, F64, I64, KINDS, MEMORY, GraphLayout
from hippocampus.store.embedded.graph_walk import Walked


class GraphPaths(GraphLayout):
    """The paths of a walk, as pydantic objects."""

    def _paths(
        self,
        walk: Walked,
        table: F64,
        picked: list[int],
        base: int,
        paths: dict[int, list[tuple[float, int, GraphPath]]],
    ) -> None:
        """Add to ``paths`` the best path from each of the walk's anchors to each
        picked memory, as ``(-strength, anchor position, path)``; ``table`` holds
        the picked memories' rows of the walk's grid.

        A cell's best path is the state holding it, unless the last hop beat it:
        then it is the first last-hop candidate reaching the cell's value.
        """
        held, ending = self._best_paths(walk, table, picked)
        states, ends = walk.states, walk.ends
        state_info = self._state_info(walk, held, ending)
        cache: dict[int, list[PathStep]] = {}
        anchors = walk.anchors
        for state, node, anchor, value in zip(
            held.tolist(),
            states.node[held].tolist(),
            states.anchor[held].tolist(),
            states.value[held].tolist(),
            strict=True,
        ):
            path = GraphPath(
                anchor=anchors[anchor], steps=self._steps(state_info, state, cache), strength=value
            )
            paths[node].append((-value, base + anchor, path))
        names = self._names
        memory_kind = KINDS[MEMORY]
        for node, anchor, parent, value, weight in zip(
            ends.node[ending].tolist(),
            ends.anchor[ending].tolist(),
            ends.parent[ending].tolist(),
            ends.value[ending].tolist(),
            ends.weight[ending].tolist(),
            strict=True,
        ):
            step = PathStep(
                type=EDGE_TO[state_info[parent][1]],
                weight=weight,
                kind=memory_kind,
                name=names[node],
            )
            path = GraphPath(
                anchor=anchors[anchor],
                steps=[*self._steps(state_info, parent, cache), step],
                strength=value,
            )
            paths[node].append((-value, base + anchor, path))

    def _best_paths(self, walk: Walked, table: F64, picked: list[int]) -> tuple[I64, I64]:
        """Where the best paths to the picked memories end: the states holding them
        (``held``) and, where the last hop beat those, the first last-hop candidate
        reaching the cell's value (``ending``)."""
        row_of = np.full(self._n_nodes, -1, dtype=np.int64)
        row_of[picked] = np.arange(len(picked))
        states, ends = walk.states, walk.ends

        held = np.flatnonzero(walk.current & (states.parent >= 0) & (row_of[states.node] >= 0))
        held = held[states.value[held] == table[row_of[states.node[held]], states.anchor[held]]]
        held_keys = states.anchor[held] * self._n_nodes + states.node[held]

        ending = np.flatnonzero(row_of[ends.node] >= 0)
        ending = ending[ends.value[ending] == table[row_of[ends.node[ending]], ends.anchor[ending]]]
        end_keys = ends.anchor[ending] * self._n_nodes + ends.node[ending]
        keep = ~np.isin(end_keys, held_keys)
        ending, end_keys = ending[keep], end_keys[keep]
        # The first candidate per cell, in discovery order.
        _, first = np.unique(end_keys, return_index=True)
        ending = ending[first]
        return held, ending

    def _state_info(
        self, walk: Walked, held: I64, ending: I64
    ) -> dict[int, tuple[int, int, int, float]]:
        """Per state on the paths ending at ``held`` and ``ending``: its node, the
        node's kind code, its parent state and the edge weight."""
        states, ends = walk.states, walk.ends
        # The states on these paths, read out of numpy once: indexing arrays one
        # scalar at a time costs more than the pydantic objects built from them.
        chain = np.concatenate([held, ends.parent[ending]])
        on_paths = [chain]
        while chain.shape[0]:
            chain = states.parent[chain]
            chain = chain[chain >= 0]
            on_paths.append(chain)
        needed = np.unique(np.concatenate(on_paths))
        nodes = states.node[needed]
        return dict(
            zip(
                needed.tolist(),
                zip(
                    nodes.tolist(),
                    self._kind[nodes].tolist(),
                    states.parent[needed].tolist(),
                    states.weight[needed].tolist(),
                    strict=True,
                ),
                strict=True,
            )
        )

    def _steps(
        self,
        state_info: dict[int, tuple[int, int, int, float]],
        state: int,
        cache: dict[int, list[PathStep]],
    ) -> list[PathStep]:
        """The steps of the path held by ``state`` (``state_info``: its node, the
        node's kind code, its parent state, the edge weight); prefixes are shared
        through ``cache``, as many results hang off the same few early states."""
        held = cache.get(state)
        if held is not None:
            return held
        node, code, parent, weight = state_info[state]
        if parent < 0:
            cache[state] = []
            return cache[state]
        # A hub edge whichever way it was walked; ASSOCIATED between two memories.
        via = code if code != MEMORY else state_info[parent][1]
        step = PathStep(type=EDGE_TO[via], weight=weight, kind=KINDS[code], name=self._names[node])
        steps = [*self._steps(state_info, parent, cache), step]
        cache[state] = steps
        return steps
