"""Long memories through the facade: embedded passage by passage, so a fact at
the end of a 20,000-character memory is found by dense search; the passages
follow edits, re-embedding and export/import."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.synth import memories
from hippocampus.dense import PASSAGE_MARGIN
from hippocampus.embed import HashingEmbedder
from hippocampus.embed.passages import passages
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from tests.unit.flaky import OPERATOR, FlakyEmbedder, operator_service

C = "persona:ada"
QUERY = "walrus calves counted near the basalt quarry lighthouse"
TAIL = (
    "At the end of the survey the lighthouse keeper counted seventeen walrus calves "
    "resting near the basalt quarry, the first walrus calves seen there in a decade."
)
_SUBJECTS = ("The build agent", "The release train", "Our staging cluster", "The nightly job")
_VERBS = ("retries", "compresses", "uploads", "verifies", "schedules", "archives")
_OBJECTS = ("the schema diff", "every artifact", "the audit trail", "the cache warmup")
_REASONS = ("because timeouts grew", "since disks filled", "so that rollbacks stay cheap")


def _long_text(chars: int = 20_000) -> str:
    sentences = (
        f"{s} {v} {o} {r}."
        for s, v, o, r in itertools.cycle(itertools.product(_SUBJECTS, _VERBS, _OBJECTS, _REASONS))
    )
    paragraphs: list[str] = []
    size = 0
    while size < chars - len(TAIL) - 400:
        paragraph = " ".join(itertools.islice(sentences, 6))
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join([*paragraphs, TAIL])


def _remember_all(service: Hippocampus) -> str:
    out = service.remember(C, NewMemory(content=_long_text(), source=OPERATOR))
    assert out.created and out.memory is not None
    for text in (
        "The lighthouse on the cape is painted red and white for ships.",
        "A basalt quarry supplies stone for the new harbour wall project.",
        "Walrus herds rest on sea ice rather than on rocky shores.",
    ):
        assert service.remember(C, NewMemory(content=text, source=OPERATOR)).created
    return out.memory.id


def _dense_top(service: Hippocampus) -> tuple[str, float]:
    result = service.recall(C, QUERY, recipe="DENSE", limit=3, learn=False)
    top = result.hits[0]
    assert top.similarity is not None
    return top.memory.id, top.similarity


def test_a_20000_character_memory_is_found_by_its_tail(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    assert len(_long_text()) >= 19_500
    long_id = _remember_all(flaky_service)

    top, similarity = _dense_top(flaky_service)

    assert top == long_id
    assert similarity > 0.5 - PASSAGE_MARGIN  # the tail's similarity, less the margin
    assert long_id in [
        h.memory.id for h in flaky_service.recall(C, QUERY, limit=3, learn=False).hits
    ]


def test_an_edit_replaces_the_passages(flaky_service: Hippocampus) -> None:
    long_id = _remember_all(flaky_service)

    flaky_service.update(
        C, long_id, MemoryPatch(content=_long_text().replace(TAIL, "The survey ended."))
    )

    assert _dense_top(flaky_service)[0] != long_id
    assert flaky_service.store.get_passages(C, [long_id])[long_id].shape[0] >= 20


def test_re_embedding_gives_a_long_memory_its_passages(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    flaky_embedder.down = True
    long_id = _remember_all(flaky_service)
    assert flaky_service.store.get_passages(C, [long_id]) == {}
    flaky_embedder.down = False

    assert flaky_service.reindex(C) == 4

    assert _dense_top(flaky_service)[0] == long_id
    assert flaky_service.store.get_passages(C, [long_id])[long_id].shape[0] >= 20


def test_export_and_import_carry_the_passages(flaky_service: Hippocampus) -> None:
    long_id = _remember_all(flaky_service)
    records = list(flaky_service.export(C))
    exported = next(r for r in records if r["type"] == "memory" and r["memory"]["id"] == long_id)
    assert len(exported["passages"]) >= 20

    flaky_service.import_records("persona:bob", records)

    np.testing.assert_array_equal(
        flaky_service.store.get_passages("persona:bob", [long_id])[long_id],
        flaky_service.store.get_passages(C, [long_id])[long_id],
    )
    hits = flaky_service.recall("persona:bob", QUERY, recipe="DENSE", limit=1, learn=False).hits
    assert hits[0].memory.id == long_id


def test_min_score_judges_a_long_memory_by_its_best_passage(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    long_id = _remember_all(flaky_service)

    # BM25 scores no similarity, so min_score computes it from the stored vectors.
    hits = flaky_service.recall(
        C,
        QUERY,
        recipe="BM25",
        limit=5,
        min_score=0.35,
        query_vector=flaky_embedder.encode([QUERY])[0],
        learn=False,
    ).hits

    assert [h.memory.id for h in hits] == [long_id]


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping the texts of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return super().encode(texts)


def test_long_passages_and_short_notes_are_embedded_in_batches_of_their_own_length(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    embedder = RecordingEmbedder()
    notes = [m.content for m in memories(10, seed=4)]
    items = [NewMemory(content=n, source=OPERATOR) for n in notes[:5]]
    items.append(NewMemory(content=_long_text(), source=OPERATOR))
    items.extend(NewMemory(content=n, source=OPERATOR) for n in notes[5:])
    with operator_service(
        tmp_path / "data", embedder, spacy_extractor, embed_batch_size=4
    ) as service:
        outs = service.remember_many(C, items)
        contents = [m.content for m in items]
        calls = [c for c in embedder.calls if set(c) & {*contents, *_pieces(_long_text())}]
        # Longest first across all the batches: the passages fill batches of their
        # own, not batches padded to a passage for one note each.
        sizes = [len(t) for call in calls for t in call]
        assert len(calls) > 2 and sizes == sorted(sizes, reverse=True)
        # Each vector went back to its own text.
        ids = [o.memory.id for o in outs if o.memory is not None]
        assert len(ids) == len(items)
        vectors = service.store.get_vectors(C, ids)
        for item, memory_id in zip(items, ids, strict=True):
            head = _pieces(item.content)[0]
            assert np.allclose(vectors[memory_id], embedder.encode([head])[0])
        rest = service.store.get_passages(C, [ids[5]])[ids[5]]
        assert np.allclose(rest, embedder.encode(_pieces(_long_text())[1:]))


def _pieces(text: str) -> list[str]:
    return [text[a:b] for a, b in passages(text, 1000, 150)]
