"""Long memories are searched by every passage: a memory scores the best of its
vector and its passages' vectors, passages follow the memory's vector through
edits, re-embedding, deletion and copies.

Vectors come from the hashing embedder, which is lexical: a query made of words
only the last passage holds matches that passage and little else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hippocampus.dense import PASSAGE_MARGIN, passage_score
from hippocampus.embed import HashingEmbedder
from hippocampus.embed.passages import passages
from hippocampus.model import RecallFilters, Tier
from hippocampus.store import GraphStore, MemoryRecord, Vector
from hippocampus.store.copy import copy_collection
from hippocampus.store.embedded import EmbeddedStore
from tests.contract.helpers import ALL_TIERS, memory

EMBEDDER = HashingEmbedder()
MODEL = EMBEDDER.name
SIZE, OVERLAP = 1000, 150

_FILLER = (
    "The deployment pipeline builds the service image, runs the unit suite and "
    "pushes the artifact to the registry before the rollout starts. "
)
TAIL = (
    "Finally the lighthouse keeper logged a walrus migration near the basalt "
    "quarry, counting seventeen walrus calves beside the quarry at dawn."
)
QUERY = "walrus calves basalt quarry lighthouse keeper"
LONG_TEXT = "\n\n".join([_FILLER * 6, _FILLER * 6, _FILLER * 6, " ".join([TAIL] * 4)])


def _unit(v: Vector) -> Vector:
    out: Vector = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def _embed(text: str) -> tuple[Vector, Vector | None]:
    """The text's vector (its first passage) and its other passages' vectors."""
    cuts = passages(text, SIZE, OVERLAP)
    rows = EMBEDDER.encode([text[a:b] for a, b in cuts])
    return rows[0], (rows[1:] if len(cuts) > 1 else None)


def _query() -> Vector:
    query: Vector = EMBEDDER.encode([QUERY])[0]
    return query


def _long_record(collection: str, memory_id: str = "long", **kw: object) -> MemoryRecord:
    m = memory(memory_id, collection, content=LONG_TEXT, model=MODEL, **kw)  # type: ignore[arg-type]
    head, rest = _embed(LONG_TEXT)
    return MemoryRecord(memory=m, vector=head, passages=rest)


def _short_records(collection: str) -> list[MemoryRecord]:
    texts = {
        "deploys": _FILLER,
        "lighthouse": "The old lighthouse on the cape is painted red and white.",
        "quarry": "A basalt quarry supplies stone for the harbour wall.",
    }
    return [
        MemoryRecord(
            memory=memory(i, collection, content=t, model=MODEL, minutes=n + 1),
            vector=EMBEDDER.encode([t])[0],
        )
        for n, (i, t) in enumerate(texts.items())
    ]


def _tail_similarity() -> float:
    _, rest = _embed(LONG_TEXT)
    assert rest is not None
    return float(_unit(rest[-1]) @ _unit(_query()))


def _long_score() -> float:
    """What dense search scores the long memory: its last passage, less the margin."""
    return passage_score(_head_similarity(), _tail_similarity())


def _head_similarity() -> float:
    head, _ = _embed(LONG_TEXT)
    return float(_unit(head) @ _unit(_query()))


def test_the_fixture_is_long_and_its_tail_is_only_in_its_last_passage() -> None:
    cuts = passages(LONG_TEXT, SIZE, OVERLAP)
    assert len(cuts) >= 3
    assert all("walrus" not in LONG_TEXT[a:b] for a, b in cuts[:-1])
    assert _tail_similarity() > 0.5 > 0.1 > _head_similarity()
    # The tail clears the margin a later passage needs to count.
    assert _tail_similarity() - PASSAGE_MARGIN > _head_similarity() + 0.2


def test_a_long_memory_is_found_by_its_last_passage(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [_long_record(collection), *_short_records(collection)])

    hits = store.search_vectors(collection, _query(), model=MODEL, k=3, filters=RecallFilters())

    assert hits[0][0] == "long"
    assert hits[0][1] == pytest.approx(_long_score(), abs=1e-4)
    assert store.get_passages(collection, ["long", "quarry"]).keys() == {"long"}
    (many,) = store.search_vectors_many(
        collection, _query()[None, :], model=MODEL, k=3, filters=RecallFilters()
    )
    assert many[0][0] == "long"
    assert many[0][1] == pytest.approx(_long_score(), abs=1e-4)


def test_without_passages_a_long_memory_scores_by_its_vector(
    store: GraphStore, collection: str
) -> None:
    store.add_memories(collection, [_long_record(collection), *_short_records(collection)])

    hits = dict(
        store.search_vectors(
            collection, _query(), model=MODEL, k=10, filters=RecallFilters(), passages=False
        )
    )

    assert hits["long"] == pytest.approx(_head_similarity(), abs=1e-4)


def test_passages_answer_to_the_filters_of_their_memory(store: GraphStore, collection: str) -> None:
    store.add_memories(
        collection,
        [_long_record(collection, tier=Tier.ARCHIVED, category="log"), *_short_records(collection)],
    )

    def found(filters: RecallFilters) -> list[str]:
        return [
            i
            for i, _ in store.search_vectors(
                collection, _query(), model=MODEL, k=10, filters=filters
            )
        ]

    assert "long" not in found(RecallFilters())
    assert found(ALL_TIERS)[0] == "long"
    assert "long" not in found(RecallFilters(tiers=list(Tier), categories=["insight"]))
    assert found(RecallFilters(tiers=list(Tier), categories=["log"])) == ["long"]


def test_passages_go_with_their_memory(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [_long_record(collection), *_short_records(collection)])

    assert store.delete_memory(collection, "long")

    assert "long" not in dict(
        store.search_vectors(collection, _query(), model=MODEL, k=10, filters=ALL_TIERS)
    )
    assert store.get_passages(collection, ["long"]) == {}


def test_new_content_replaces_the_passages(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [_long_record(collection), *_short_records(collection)])
    kept = _long_record(collection).memory.model_copy(update={"importance": 0.9})
    store.replace_memory(collection, MemoryRecord(memory=kept), replace_edges=False)
    assert "long" in store.get_passages(collection, ["long"])  # no new vector: kept

    text = "A short note now: the pipeline deploys on Fridays only."
    edited = kept.model_copy(update={"content": text})
    store.replace_memory(
        collection,
        MemoryRecord(memory=edited, vector=EMBEDDER.encode([text])[0]),
        replace_edges=False,
    )

    assert store.get_passages(collection, ["long"]) == {}
    hits = dict(store.search_vectors(collection, _query(), model=MODEL, k=10, filters=ALL_TIERS))
    assert hits.get("long", -1.0) < 0.3


def test_a_dropped_vector_takes_the_passages(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [_long_record(collection)])
    pending = _long_record(collection).memory.model_copy(update={"embedding_model": None})

    store.replace_memory(
        collection, MemoryRecord(memory=pending, drop_vector=True), replace_edges=False
    )

    assert store.get_passages(collection, ["long"]) == {}
    assert store.search_vectors(collection, _query(), model=MODEL, k=5, filters=ALL_TIERS) == []


def test_re_embedding_carries_the_passages(store: GraphStore, collection: str) -> None:
    plain = memory("long", collection, content=LONG_TEXT, model=None)
    store.add_memories(collection, [MemoryRecord(memory=plain), *_short_records(collection)])
    head, rest = _embed(LONG_TEXT)
    assert rest is not None

    store.set_vectors(collection, [("long", head, MODEL)], passages={"long": rest})

    stored = store.get_passages(collection, ["long"])["long"]
    np.testing.assert_allclose(stored, rest, rtol=1e-6)
    hits = store.search_vectors(collection, _query(), model=MODEL, k=3, filters=RecallFilters())
    assert hits[0][0] == "long"
    assert hits[0][1] == pytest.approx(_long_score(), abs=1e-4)

    store.set_vectors(collection, [("long", head, MODEL)])  # a whole embedding, no passages
    assert store.get_passages(collection, ["long"]) == {}


def test_a_copy_carries_the_passages(
    store: GraphStore, collection: str, new_collection: Callable[[], str], tmp_path: Path
) -> None:
    store.add_memories(collection, [_long_record(collection), *_short_records(collection)])
    _, rest = _embed(LONG_TEXT)
    assert rest is not None

    with EmbeddedStore(tmp_path / "copy") as copy:
        report = copy_collection(store, copy, collection, into="copied")
        assert report.passages == rest.shape[0]
        np.testing.assert_allclose(copy.get_passages("copied", ["long"])["long"], rest, rtol=1e-6)
        back = new_collection()
        copy_collection(copy, store, "copied", into=back)

    np.testing.assert_allclose(store.get_passages(back, ["long"])["long"], rest, rtol=1e-6)
    hits = store.search_vectors(back, _query(), model=MODEL, k=3, filters=RecallFilters())
    assert hits[0][0] == "long"


def test_passages_without_a_vector_are_refused(store: GraphStore, collection: str) -> None:
    from hippocampus.errors import InvalidInputError

    _, rest = _embed(LONG_TEXT)
    plain = memory("long", collection, content=LONG_TEXT, model=None)
    with pytest.raises(InvalidInputError):
        store.add_memories(collection, [MemoryRecord(memory=plain, passages=rest)])
    assert store.get_memories(collection, ["long"]) == {}
