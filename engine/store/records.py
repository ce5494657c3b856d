"""What the store contract's methods take and give besides the model's own
objects: a memory as written, a learning update, a collection's counts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from hippocampus.model import Edge, Event, Memory
from hippocampus.model.association import EdgeUpdate

Vector = npt.NDArray[np.float32]

EdgeEnds = tuple[str, str, str, float]
"""An edge's ``(source, type, target, weight)``, as
:meth:`~hippocampus.store.GraphStore.iter_edge_ends` gives it."""


@dataclass(frozen=True)
class MemoryRecord:
    """A memory as written: the memory, its vector (``None`` when it has none yet:
    ``memory.embedding_model`` is then ``None`` too) and its outgoing edges.

    ``drop_vector`` is for :meth:`GraphStore.replace_memory` only: the stored
    vector goes too (it described content that changed and no new vector could be
    made), so the memory is pending re-embedding. It cannot come with a vector.

    ``passages`` are the vectors of a long memory's passages after its first (the
    first passage's vector is ``vector``): 2-D, one row per passage in order, of
    the same model and dimension as ``vector``, which they need. Dense search
    scores a memory by the best of ``vector`` and its passages. They are written
    with ``vector`` and replaced with it: a record with a vector and no passages
    leaves the memory none.

    ``keep_learned`` and ``keep_tier`` are for :meth:`GraphStore.replace_memory`
    too: an edit made from an earlier read keeps what learning recorded in the
    stored memory meanwhile (:func:`~hippocampus.model.memory.with_learning_of`; with
    ``keep_tier`` as well, its tier and ``promoted_at``), taken inside the write's
    transaction, so an edit never undoes a concurrent learning update.
    """

    memory: Memory
    vector: Vector | None = None
    edges: Sequence[Edge] = field(default_factory=tuple)
    drop_vector: bool = False
    passages: Vector | None = None
    keep_learned: bool = False
    keep_tier: bool = False


@dataclass(frozen=True)
class Learned:
    """What one learning update writes (see :meth:`GraphStore.learn`), all in one
    transaction.

    Attributes:
        memories: memories with changed metadata (confidence, counts, review,
            tier, the conversations a merged repeat came from, ...). Their content,
            vector and hub edges are as read: a learning update changes what was
            learned about a memory, never what it says. A memory whose place
            among its conversation's turns changes is relinked there.
        states: state documents to write, by key.
        reinforce: edge reinforcements (:meth:`GraphStore.reinforce_edges`).
        events: appended to the collection's event log.
    """

    memories: Sequence[Memory] = ()
    states: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    reinforce: Sequence[EdgeUpdate] = ()
    events: Sequence[Event] = ()


LearnChange = Callable[[Mapping[str, Memory], Mapping[str, dict[str, Any]]], Learned]
"""A learning update: given the memories and state documents it named, as stored
now (absent ones left out), what to write. It may run more than once (a store
runs a transaction that lost a race again) and must depend on nothing but its
arguments; it raises to write nothing."""


class StoreStats(BaseModel):
    """Counts a store can give cheaply for one collection."""

    memories: int = 0
    by_category: dict[str, int] = Field(default_factory=dict)
    by_tier: dict[str, int] = Field(default_factory=dict)
    pending_embeddings: int = 0
    hubs: dict[str, int] = Field(default_factory=dict)
    edges: dict[str, int] = Field(default_factory=dict)
    events: int = 0
    """Events ever appended, those compacted away included (as ``events_by_type``)."""
    events_by_type: dict[str, int] = Field(default_factory=dict)
    events_retained: int = 0
    """Events the log still holds (what :meth:`GraphStore.iter_events` yields)."""
    quality_scored: int = 0
    quality_sum: float = 0.0
    """Memories with a quality score, and the sum of their scores (kept as a
    running total where the store can)."""
