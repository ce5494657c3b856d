"""Standing instructions through the facade: a memory that says how to answer a
kind of request is embedded leaning toward that kind of request, on every path
that embeds a memory (remember, a batch, an edit, re-embedding)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.embed.scope import scope, toward_scope
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.dedup import DedupConfig
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from tests.unit.flaky import OPERATOR, FlakyEmbedder, operator_service

C = "persona:ada"
RULE = "Always include version numbers when I ask about software dependencies."
PLAIN = "We chose Flask for the budget tracker because it stays small."


def _stored(service: Hippocampus, memory_id: str) -> np.ndarray:
    return service.store.get_vectors(C, [memory_id])[memory_id]


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
    flaky_service: Hippocampus, flaky_embedder: HashingEmbedder
) -> None:
    rule = flaky_service.remember(C, NewMemory(content=RULE, source=OPERATOR)).memory
    plain = flaky_service.remember(C, NewMemory(content=PLAIN, source=OPERATOR)).memory
    assert rule is not None and plain is not None

    own = flaky_embedder.encode([RULE])[0]
    assert not np.allclose(_stored(flaky_service, rule.id), own)
    np.testing.assert_allclose(
        _stored(flaky_service, rule.id), _expected(flaky_embedder, RULE), atol=1e-6
    )
    plain_vector = flaky_embedder.encode([PLAIN])[0]
    np.testing.assert_allclose(_stored(flaky_service, plain.id), plain_vector, atol=1e-6)

    scope_vector = flaky_embedder.encode(["software dependencies"])[0]
    assert float(_stored(flaky_service, rule.id) @ scope_vector) > float(own @ scope_vector)


def test_a_batch_leans_as_one_memory_does(
    flaky_service: Hippocampus, flaky_embedder: HashingEmbedder
) -> None:
    out = flaky_service.remember_many(
        C, [NewMemory(content=t, source=OPERATOR) for t in (PLAIN, RULE)]
    )
    ids = [o.memory.id for o in out if o.memory is not None]
    np.testing.assert_allclose(
        _stored(flaky_service, ids[1]), _expected(flaky_embedder, RULE), atol=1e-6
    )


def test_an_edit_that_drops_the_condition_drops_the_lean(
    flaky_service: Hippocampus, flaky_embedder: HashingEmbedder
) -> None:
    rule = flaky_service.remember(C, NewMemory(content=RULE, source=OPERATOR)).memory
    assert rule is not None
    edited = "Always include version numbers."
    flaky_service.update(C, rule.id, MemoryPatch(content=edited))
    edited_vector = flaky_embedder.encode([edited])[0]
    np.testing.assert_allclose(_stored(flaky_service, rule.id), edited_vector, atol=1e-6)


def test_re_embedding_leans_as_remembering_does(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    flaky_embedder.down = True
    rule = flaky_service.remember(C, NewMemory(content=RULE, source=OPERATOR)).memory
    assert rule is not None and flaky_service.store.get_vectors(C, [rule.id]) == {}
    flaky_embedder.down = False

    assert flaky_service.reindex(C) == 1

    np.testing.assert_allclose(
        _stored(flaky_service, rule.id), _expected(flaky_embedder, RULE), atol=1e-6
    )


def test_two_rules_of_one_scope_are_told_apart_by_their_words(
    tmp_path: Path, flaky_embedder: FlakyEmbedder, spacy_extractor: SpacyConceptExtractor
) -> None:
    # Their texts' vectors are far apart (0.81 with the hashing flaky_embedder); leaning
    # both toward the same scope brings them to 0.94, past this service's bar.
    first = "Always include version numbers when I ask about software dependencies."
    second = "Always include release dates when I ask about software dependencies."
    own = flaky_embedder.encode([first, second])
    leaned = [_expected(flaky_embedder, t) for t in (first, second)]
    bar = 0.92
    assert float(own[0] @ own[1]) < bar < float(leaned[0] @ leaned[1])
    dedup = DedupConfig(similarity=bar)
    with operator_service(
        tmp_path / "data", flaky_embedder, spacy_extractor, dedup=dedup
    ) as service:
        assert service.remember(C, NewMemory(content=first, source=OPERATOR)).created
        again = service.remember(C, NewMemory(content=second, source=OPERATOR))
        assert again.created and again.duplicate_of is None
        repeat = service.remember(C, NewMemory(content=first + " ", source=OPERATOR))
        assert not repeat.created  # the same rule again is still a repeat
