"""Associative expansion: anchors, the paths walked from them, and what they reach."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model.graph import EdgeType

MEMORY_NODE = "Memory"
"""Node kind of a memory in anchors and paths (hub kinds are HubKind values)."""


HUB_MIN_FACTOR = 0.001
"""Below this degree factor a hub is negligible and expansion does not walk
through it (:attr:`ExpandParams.hub_min_factor`'s default)."""

MAX_HUB_DEGREE = 5_000
"""Above this many memories a hub is not walked through, whatever its degree
factor (:attr:`ExpandParams.max_hub_degree`'s default)."""


class Anchor(BaseModel):
    """A node expansion starts from: a hub (kind = Domain/Trigger/Concept, name) or a
    memory (kind = ``Memory``, name = its id), with a starting strength in (0, 1]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str
    strength: float = Field(default=1.0, gt=0.0, le=1.0)


class PathStep(BaseModel):
    """One edge walked: its type and weight, and the node it led to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: EdgeType
    weight: float
    kind: str
    name: str


class GraphPath(BaseModel):
    """The strongest path from one anchor to a memory.

    ``strength`` = anchor strength × product over steps of (edge weight × hop damping).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    anchor: Anchor
    steps: list[PathStep]
    strength: float


class Expansion(BaseModel):
    """A memory reached by expansion.

    Attributes:
        memory_id: the memory reached.
        strength: the sum over anchors of the best path from each.
        anchors: how many distinct anchors reach it.
        best: the strength of the strongest single anchor's path (what one
            anchor alone would give it).
        best_anchor: the anchor of that path.
        paths: the best path from each anchor, strongest first.
    """

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    strength: float
    anchors: int
    best: float = 0.0
    best_anchor: Anchor | None = None
    paths: list[GraphPath]


class ExpandParams(BaseModel):
    """How far and how wide expansion walks.

    Attributes:
        max_depth: most edges in a path (1-3).
        damping: factor applied per hop, so longer paths weigh less.
        hub_fanout: at most this many of a hub's memories are followed, strongest
            edges first, so a concept shared by thousands of memories costs no more
            than one shared by a few.
        frontier: at most this many nodes carried from one hop to the next.
        hub_degree_penalty: when true, walking through a hub is damped by its
            specificity, as ``hub_degree_mode`` says.
        hub_degree_mode: ``log`` damps by ``1 / (1 + ln(1 + degree / pivot))``,
            gently: a hub of 20 memories keeps 0.59 of a path; ``inverse`` by
            ``1 / degree``, as if the walk left the hub for one of its memories at
            random: a name two memories share is a strong bridge, a word two
            hundred share next to none.
        hub_degree_pivot: for ``log``, the degree below which a hub counts as
            specific.
        hub_min_factor: with ``hub_degree_penalty``, a hub whose factor is below
            this is not walked through at all: every path through it would be
            negligible, and following it is what costs (with ``inverse``, the
            default 0.001 skips hubs of more than 1,000 memories). Both stores
            apply it.
        max_hub_degree: a hub linking more memories than this is not walked
            through at all, with or without the penalty, in either mode: a hub
            with more members says nothing about any one of them, and finding
            a hub's ``hub_fanout`` strongest edges can mean reading all of them
            (the Neo4j store does), so this bounds what one hub visit reads.
            ``None``: no ceiling (drawing a hub's neighbourhood wants its
            strongest members however many it has). Both stores apply it.
        max_results: most memories returned.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_depth: int = Field(default=3, ge=1, le=3)
    damping: float = Field(default=0.85, gt=0.0, le=1.0)
    hub_fanout: int = Field(default=64, ge=1, le=10_000)
    frontier: int = Field(default=256, ge=1, le=100_000)
    hub_degree_penalty: bool = True
    hub_degree_mode: Literal["log", "inverse"] = "log"
    hub_degree_pivot: float = Field(default=20.0, gt=0.0)
    hub_min_factor: float = Field(default=HUB_MIN_FACTOR, ge=0.0, lt=1.0)
    max_hub_degree: int | None = Field(default=MAX_HUB_DEGREE, ge=1)
    max_results: int = Field(default=200, ge=1, le=10_000)


class EdgeUpdate(BaseModel):
    """A reinforcement to apply to one edge, set-based in the store: an existing
    edge gets ``weight = max(weight, min(cap, weight + delta))`` (weaker evidence
    never lowers an edge), a missing one is created at ``initial`` when ``create``
    (else skipped); either way ``co_occurrences += 1`` and ``last_co_occurred = at``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    type: EdgeType
    target: str
    delta: float = Field(ge=0.0, le=1.0)
    cap: float = Field(ge=0.0, le=1.0)
    initial: float = Field(ge=0.0, le=1.0)
    at: datetime
    kind: str | None = None
    create: bool = True


class HubMatch(BaseModel):
    """A hub node matched to a query: by exact name (similarity 1.0) or by the
    similarity of its name's embedding to a query phrase's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    name: str
    similarity: float
    degree: int
