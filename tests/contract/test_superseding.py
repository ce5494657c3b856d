"""The store contract, through the service: a reversal supersedes what it takes back.

The newer of two conflicting memories links to the older by ``SUPERSEDES``, the
older names it in ``superseded_by``, and a question about the present ranks the
newer first; alike on every store.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import EdgeType, MemoryPatch, NewMemory
from hippocampus.retrieve.config import DEFAULT_RECIPE, RECIPES
from hippocampus.service import Hippocampus
from hippocampus.store import GraphStore
from tests.contract.helpers import DIM

JUNE = datetime(2025, 6, 12, 9, 0, tzinfo=UTC)
OCTOBER = datetime(2025, 10, 2, 9, 0, tzinfo=UTC)
FREEZE = "No deploys on Friday: the release freeze starts after the June payments outage"
LIFTED = "The Friday deploy freeze is lifted: canary checks now make Friday releases safe"


@pytest.fixture
def service(store: GraphStore, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    svc = Hippocampus(store, HashingEmbedder(DIM), spacy_extractor)
    yield svc
    svc.flush_learning()  # the store stays open: the suite's fixture closes it


def _linked(store: GraphStore, collection: str, memory_id: str, kind: EdgeType) -> list[str]:
    return [e.target for e in store.edges_of(collection, memory_id) if e.type == kind]


def _superseding(store: GraphStore, collection: str, memory_id: str) -> list[str]:
    return _linked(store, collection, memory_id, EdgeType.SUPERSEDES)


def test_the_later_reversal_supersedes_the_earlier_rule(
    service: Hippocampus, store: GraphStore, collection: str
) -> None:
    june = service.remember(collection, NewMemory(content=FREEZE, occurred_at=JUNE))
    october = service.remember(collection, NewMemory(content=LIFTED, occurred_at=OCTOBER))
    assert june.memory is not None and october.memory is not None
    old, new = june.memory.id, october.memory.id
    assert october.conflicts_with == [old] and october.supersedes == [old]
    assert _superseding(store, collection, new) == [old]
    assert _superseding(store, collection, old) == []
    assert service.get(collection, old).retrieval.superseded_by == [new]
    assert service.get(collection, new).retrieval.superseded_by == []


def test_an_earlier_memory_remembered_later_is_superseded_by_the_stored_one(
    service: Hippocampus, store: GraphStore, collection: str
) -> None:
    october = service.remember(collection, NewMemory(content=LIFTED, occurred_at=OCTOBER))
    june = service.remember(collection, NewMemory(content=FREEZE, occurred_at=JUNE))
    assert june.memory is not None and october.memory is not None
    old, new = june.memory.id, october.memory.id
    assert june.conflicts_with == [new] and june.supersedes == []
    assert june.memory.retrieval.superseded_by == [new]
    assert _superseding(store, collection, new) == [old]
    assert service.get(collection, old).retrieval.superseded_by == [new]


def test_within_one_batch_the_later_supersedes_whatever_the_order(
    service: Hippocampus, store: GraphStore, collection: str
) -> None:
    october, june = service.remember_many(
        collection,
        [
            NewMemory(content=LIFTED, occurred_at=OCTOBER),
            NewMemory(content=FREEZE, occurred_at=JUNE),
        ],
    )
    assert june.memory is not None and october.memory is not None
    assert _superseding(store, collection, october.memory.id) == [june.memory.id]
    assert service.get(collection, june.memory.id).retrieval.superseded_by == [october.memory.id]


def test_a_question_about_the_present_ranks_the_reversal_above_the_stale_rule(
    service: Hippocampus, collection: str
) -> None:
    june = service.remember(collection, NewMemory(content=FREEZE, occurred_at=JUNE))
    october = service.remember(collection, NewMemory(content=LIFTED, occurred_at=OCTOBER))
    assert june.memory is not None and october.memory is not None
    service.remember(collection, NewMemory(content="Deploys go out through the canary pipeline"))

    def ranked(query: str, present_first: bool = True) -> list[str]:
        recipe = RECIPES[DEFAULT_RECIPE].model_copy(update={"present_first": present_first})
        found = service.recall(collection, query, learn=False, recipe=recipe)
        return [h.memory.id for h in found.hits]

    now = ranked("can we deploy on Friday")
    assert now.index(october.memory.id) < now.index(june.memory.id)
    # A question about the past ranks as it would without the step.
    then = "why did we freeze Friday deploys"
    assert ranked(then) == ranked(then, present_first=False)


def test_forgetting_the_newer_memory_unmarks_the_older(
    service: Hippocampus, store: GraphStore, collection: str
) -> None:
    june = service.remember(collection, NewMemory(content=FREEZE, occurred_at=JUNE))
    october = service.remember(collection, NewMemory(content=LIFTED, occurred_at=OCTOBER))
    assert june.memory is not None and october.memory is not None
    service.forget(collection, october.memory.id)
    assert service.get(collection, june.memory.id).retrieval.superseded_by == []
    assert _superseding(store, collection, june.memory.id) == []


def _conflicting(store: GraphStore, collection: str, memory_id: str) -> list[str]:
    return _linked(store, collection, memory_id, EdgeType.CONFLICTS_WITH)


def test_an_edit_that_reverses_a_stored_rule_supersedes_it(
    service: Hippocampus, store: GraphStore, collection: str
) -> None:
    june = service.remember(collection, NewMemory(content=FREEZE, occurred_at=JUNE))
    note = service.remember(
        collection, NewMemory(content="Canary checks run on every release", occurred_at=OCTOBER)
    )
    assert june.memory is not None and note.memory is not None and note.conflicts_with == []
    old, new = june.memory.id, note.memory.id
    edited = service.edit(collection, new, MemoryPatch(content=LIFTED))
    assert edited.conflicts_with == [old] and edited.supersedes == [old]
    assert any(old in reason for reason in edited.reasons)
    assert _conflicting(store, collection, new) == [old]
    assert _superseding(store, collection, new) == [old]
    assert service.get(collection, old).retrieval.superseded_by == [new]
    # Editing it again to the same reversal links nothing twice.
    again = service.edit(collection, new, MemoryPatch(content=LIFTED + "."))
    assert again.conflicts_with == [old]
    assert _conflicting(store, collection, new) == [old]
    assert service.get(collection, old).retrieval.superseded_by == [new]


def test_an_edit_into_an_older_rule_is_superseded_by_the_stored_reversal(
    service: Hippocampus, store: GraphStore, collection: str
) -> None:
    october = service.remember(collection, NewMemory(content=LIFTED, occurred_at=OCTOBER))
    note = service.remember(
        collection, NewMemory(content="The payments outage hit checkout", occurred_at=JUNE)
    )
    assert october.memory is not None and note.memory is not None
    old, new = note.memory.id, october.memory.id
    edited = service.edit(collection, old, MemoryPatch(content=FREEZE))
    assert edited.conflicts_with == [new] and edited.supersedes == []
    assert edited.memory.retrieval.superseded_by == [new]
    assert service.get(collection, old).retrieval.superseded_by == [new]
    assert _superseding(store, collection, new) == [old]
    # One link, from the edited memory: the stored reversal gains no second one.
    assert _conflicting(store, collection, new) == []


def test_an_edit_is_never_judged_against_its_own_old_text(
    service: Hippocampus, collection: str
) -> None:
    rule = service.remember(collection, NewMemory(content=FREEZE, occurred_at=JUNE))
    assert rule.memory is not None
    # "No deploys on Friday" edited into its reversal: one memory, no conflict.
    edited = service.edit(collection, rule.memory.id, MemoryPatch(content=LIFTED))
    assert edited.conflicts_with == [] and edited.memory.retrieval.superseded_by == []
    # An edit that keeps the content judges nothing.
    same = service.edit(collection, rule.memory.id, MemoryPatch(importance=0.9))
    assert same.conflicts_with == [] and same.reasons == []
