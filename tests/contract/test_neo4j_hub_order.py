"""A hub's strongest edges on a live Neo4j (skipped without one; ``NEO4J_REQUIRED=1``
makes that a failure).

Expansion leaves a hub through its ``hub_fanout`` strongest edges. The store
reads them from an index of each hub's edges in order of strength
(``schema/domain_edge_rank`` and its siblings), stopping after the fanout, so
what a visit costs does not grow with the hub. Every write of a weight keeps the
edge's place in that order; setup gives the edges of a database written before
the order existed their place.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from hippocampus.model import EdgeType, RecallFilters, Tier
from hippocampus.model.association import Anchor, EdgeUpdate, ExpandParams
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.neo4j import Neo4jStore
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import T0, edge, memory, named, record
from tests.contract.plans import db_hits, forget_plans, planning

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])

IN_DOMAIN, HAS_TRIGGER, ABOUT = EdgeType.IN_DOMAIN, EdgeType.HAS_TRIGGER, EdgeType.ABOUT
ACTIVE = RecallFilters(tiers=[Tier.ACTIVE])
FANOUT = 8


def _params(fanout: int = FANOUT) -> ExpandParams:
    # No penalty: a hub of thousands is walked through like a small one, and
    # only its fanout strongest edges are followed.
    return ExpandParams(max_depth=1, hub_fanout=fanout, hub_degree_penalty=False)


def _hub(store: Neo4jStore | EmbeddedStore, collection: str, size: int) -> None:
    """``size`` memories on one Domain, one Trigger and one Concept hub, with
    weights that repeat (ties broken by id) and a few strong ones spread out."""
    records = []
    for i in range(size):
        mid = f"m{i:05d}"
        weight = 0.9 if i % 97 == 5 else 0.1 + (i % 7) / 10
        records.append(
            record(
                memory(mid, collection, minutes=i),
                [
                    edge(mid, IN_DOMAIN, "infra", weight),
                    edge(mid, HAS_TRIGGER, "deploy", weight),
                    edge(mid, ABOUT, "rollback", 1.0 - weight),
                ],
            )
        )
    for start in range(0, size, 1_000):
        store.add_memories(collection, records[start : start + 1_000])


def _reached(store: Neo4jStore | EmbeddedStore, collection: str, kind: str, name: str) -> list:
    found = store.expand(
        collection, [Anchor(kind=kind, name=name)], params=_params(), filters=ACTIVE
    )
    return [(e.memory_id, round(e.strength, 9)) for e in found]


@pytest.mark.parametrize(
    ("kind", "name"), [("Domain", "infra"), ("Trigger", "deploy"), ("Concept", "rollback")]
)
def test_a_hub_is_left_through_its_strongest_edges_as_the_embedded_store_leaves_it(
    neo4j_store: Neo4jStore, dropped: list[str], tmp_path, kind: str, name: str
) -> None:
    c = named(dropped, "order")
    _hub(neo4j_store, c, 600)
    embedded = EmbeddedStore(tmp_path / "data")
    try:
        _hub(embedded, c, 600)
        want = _reached(embedded, c, kind, name)
    finally:
        embedded.close()
    assert len(want) == FANOUT
    assert _reached(neo4j_store, c, kind, name) == want


def test_what_leaving_a_hub_reads_does_not_grow_with_the_hub(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    hits = {}
    for size in (200, 4_000):
        c = named(dropped, f"order{size}")
        _hub(neo4j_store, c, size)
        forget_plans(neo4j_store)
        driver, planned = planning(neo4j_store, "PROFILE", only=frozenset({"recall/expand"}))
        planned.expand(c, [Anchor(kind="Trigger", name="deploy")], params=_params(), filters=ACTIVE)
        (profiled,) = driver.planned
        hits[size] = db_hits(profiled.plan)
    # Reading and sorting every edge made this grow 20-fold with the hub.
    assert hits[4_000] <= 1.2 * hits[200], hits


def test_learning_and_decay_move_an_edge_in_its_hubs_order(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "moves")
    _hub(neo4j_store, c, 300)
    top = [mid for mid, _ in _reached(neo4j_store, c, "Trigger", "deploy")]
    weakest = "m00000"  # weight 0.1
    assert weakest not in top
    at = T0 + timedelta(days=400)
    update = EdgeUpdate(
        source=weakest, type=HAS_TRIGGER, target="deploy", delta=0.95, cap=1.0, initial=0.5, at=at
    )
    neo4j_store.reinforce_edges(c, [update])
    assert _reached(neo4j_store, c, "Trigger", "deploy")[0][0] == weakest
    # Every edge but the reinforced one goes unused, and decays to the floor.
    decayed = neo4j_store.decay_edges(
        c, period="p1", unused_before=at, step=1.0, floor=0.01, types=[HAS_TRIGGER]
    )
    assert decayed == 299
    reached = _reached(neo4j_store, c, "Trigger", "deploy")
    # The reinforced edge first; then the floor's ties, by id.
    assert [mid for mid, _ in reached] == [weakest] + [f"m{i:05d}" for i in range(1, FANOUT)]


def test_setup_ranks_the_hub_edges_of_a_database_written_before_the_order(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "older")
    _hub(neo4j_store, c, 2_500)
    want = {
        hub: _reached(neo4j_store, c, *hub)
        for hub in (("Domain", "infra"), ("Concept", "rollback"))
    }
    # The collection as schema version 6 left it: hub edges without their order.
    with neo4j_store._driver.session(database=neo4j_store._database) as session:
        session.run(
            "MATCH (m:Memory {collection: $c})-[r:IN_DOMAIN|HAS_TRIGGER|ABOUT]->() "
            "WHERE m.id IS NOT NULL REMOVE r.hub, r.rank, r.mid",
            c=c,
        ).consume()
    assert _reached(neo4j_store, c, "Domain", "infra") == []
    # What setup() runs for each collection of a database of schema version 6:
    # 1,000 memories a transaction, and again (a setup cut short) to no effect.
    for _ in range(2):
        neo4j_store._rank_hub_edges(c)
        assert {hub: _reached(neo4j_store, c, *hub) for hub in want} == want
