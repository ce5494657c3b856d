"""Recall reaches a hit's neighbouring turns when they carry what the hit lacks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import RecallFilters
from hippocampus.retrieve.config import ASSOCIATIVE
from hippocampus.service import Hippocampus
from tests.unit.retrieve.turns import hashing_service, remember_turns

C = "persona:turns"
QUERY = "show me how to implement the login feature with password hashing"

TURNS = [
    ("user", "I started the budget tracker in Flask last week, mostly the ledger views."),
    ("user", "Always format every snippet with syntax highlighting from now on."),
    (
        "assistant",
        "Understood. For the login feature I will show the password hashing code, the "
        "implement steps for the session, and the login form, all highlighted.",
    ),
    ("user", "CSV exports round amounts at cents."),
    ("assistant", "Rounding at cents happens inside our CSV writer, before formatting."),
]


@pytest.fixture
def service(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    yield from hashing_service(tmp_path / "data", spacy_extractor)


def _remember(svc: Hippocampus, conversation: str | None) -> list[str]:
    return remember_turns(svc, C, TURNS, conversation)


def test_a_turn_is_found_through_the_reply_that_answers_the_query(service: Hippocampus) -> None:
    ids = _remember(service, "chat-1")
    instruction, reply = ids[1], ids[2]
    dense = service.recall(C, QUERY, limit=3, recipe="DENSE", learn=False)
    assert instruction not in [h.memory.id for h in dense.hits[:2]]
    found = service.recall(C, QUERY, limit=3, learn=False)
    assert [h.memory.id for h in found.hits[:2]] == [reply, instruction]


def test_turn_context_respects_the_filters(service: Hippocampus) -> None:
    ids = _remember(service, "chat-1")
    found = service.recall(
        C, QUERY, limit=3, learn=False, filters=RecallFilters(speakers=["assistant"])
    )
    assert ids[1] not in [h.memory.id for h in found.hits]


def test_memories_outside_a_conversation_get_no_context(service: Hippocampus) -> None:
    ids = _remember(service, None)
    # Among five memories crowding and variety would reorder them on their own:
    # leave them out so that the context is all that could lift the instruction.
    uncrowded = ASSOCIATIVE.model_copy(update={"crowding": 0.0, "mmr_lambda": None})
    found = service.recall(C, QUERY, limit=3, learn=False, recipe=uncrowded)
    assert ids[1] not in [h.memory.id for h in found.hits[:2]]
