"""Standing instructions through the facade: a memory that says how to answer a
kind of request is embedded leaning toward that kind of request, on every path
that embeds a memory (remember, a batch, an edit, re-embedding)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engine.embed import HashingEmbedder
from engine.embed.scope import scope, toward_scope
from engine.extract import SpacyConceptExtractor
from engine.extract.dedup import DedupConfig
from engine.model import MemoryPatch, NewMemory
from engine.service import Hippocampus
from tests.unit.flaky import OPERATOR, FlakyEmbedder, operator_service

C = "persona:ada"
RULE = "Always include version numbers when I ask about software dependencies."
PLAIN = "We chose Flask for the budget tracker because it stays small."


@pytest.fixture
def embedder() -> FlakyEmbedder:
    return FlakyEmbedder()


@pytest.fixture
def svc(
    tmp_path: Path, embedder: FlakyEmbedder, spacy_extractor: SpacyConceptExtractor
) -> Iterator[Hippocampus]:
    with operator_service(tmp_path / "data", embedder, spacy_extractor) as service:
        yield service


def _stored(svc: Hippocampus, memory_id: str) -> np.ndarray:
    return svc.store.get_vectors(C, [memory_id])[memory_id]


def _expected(embedder: HashingEmbedder, text: str) -> np.ndarray:
    clause = scope(text)
    head, *rest = embedder.encode([text, *([clause] if clause else [])])
    return toward_scope(head, rest[0]) if rest else head


def test_toward_scope_is_the_unit_mean_of_the_two() -> None:
    a = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 2.0, 0.0], dtype=np.float32)  # not at unit length
    lean = toward_scope(a, b)
    assert np.linalg.norm(lean) == pytest.approx(1.0)
    assert float(lean @ a) == pytest.approx(float(lean @ (b / 2)))
    assert float(lean @ a) > float(a @ (b / 2))


def test_a_rule_leans_toward_its_scope_and_a_plain_memory_does_not(
    svc: Hippocampus, embedder: HashingEmbedder
) -> None:
    rule = svc.remember(C, NewMemory(content=RULE, source=OPERATOR)).memory
    plain = svc.remember(C, NewMemory(content=PLAIN, source=OPERATOR)).memory
    assert rule is not None and plain is not None

    own = embedder.encode([RULE])[0]
    assert not np.allclose(_stored(svc, rule.id), own)
    np.testing.assert_allclose(_stored(svc, rule.id), _expected(embedder, RULE), atol=1e-6)
    plain_vector = embedder.encode([PLAIN])[0]
    np.testing.assert_allclose(_stored(svc, plain.id), plain_vector, atol=1e-6)

    scope_vector = embedder.encode(["software dependencies"])[0]
    assert float(_stored(svc, rule.id) @ scope_vector) > float(own @ scope_vector)


def test_a_batch_leans_as_one_memory_does(svc: Hippocampus, embedder: HashingEmbedder) -> None:
    out = svc.remember_many(C, [NewMemory(content=t, source=OPERATOR) for t in (PLAIN, RULE)])
    ids = [o.memory.id for o in out if o.memory is not None]
    np.testing.assert_allclose(_stored(svc, ids[1]), _expected(embedder, RULE), atol=1e-6)


def test_an_edit_that_drops_the_condition_drops_the_lean(
    svc: Hippocampus, embedder: HashingEmbedder
) -> None:
    rule = svc.remember(C, NewMemory(content=RULE, source=OPERATOR)).memory
    assert rule is not None
    edited = "Always include version numbers."
    svc.update(C, rule.id, MemoryPatch(content=edited))
    edited_vector = embedder.encode([edited])[0]
    np.testing.assert_allclose(_stored(svc, rule.id), edited_vector, atol=1e-6)


def test_re_embedding_leans_as_remembering_does(svc: Hippocampus, embedder: FlakyEmbedder) -> None:
    embedder.down = True
    rule = svc.remember(C, NewMemory(content=RULE, source=OPERATOR)).memory
    assert rule is not None and svc.store.get_vectors(C, [rule.id]) == {}
    embedder.down = False

    assert svc.reindex(C) == 1

    np.testing.assert_allclose(_stored(svc, rule.id), _expected(embedder, RULE), atol=1e-6)


def test_two_rules_of_one_scope_are_told_apart_by_their_words(
    tmp_path: Path, embedder: FlakyEmbedder, spacy_extractor: SpacyConceptExtractor
) -> None:
    # Their texts' vectors are far apart (0.81 with the hashing embedder); leaning
    # both toward the same scope brings them to 0.94, past this service's bar.
    first = "Always include version numbers when I ask about software dependencies."
    second = "Always include release dates when I ask about software dependencies."
    own = embedder.encode([first, second])
    leaned = [_expected(embedder, t) for t in (first, second)]
    bar = 0.92
    assert float(own[0] @ own[1]) < bar < float(leaned[0] @ leaned[1])
    dedup = DedupConfig(similarity=bar)
    with operator_service(tmp_path / "data", embedder, spacy_extractor, dedup=dedup) as service:
        assert service.remember(C, NewMemory(content=first, source=OPERATOR)).created
        again = service.remember(C, NewMemory(content=second, source=OPERATOR))
        assert again.created and again.duplicate_of is None
        repeat = service.remember(C, NewMemory(content=first + " ", source=OPERATOR))
        assert not repeat.created  # the same rule again is still a repeat
