"""A turn's speaker label is left out of what is embedded: by :func:`said`, and
through the service on every path that embeds a memory."""

from __future__ import annotations

import numpy as np
import pytest

from hippocampus.extract.sanitize import ROLE_PLACEHOLDER
from hippocampus.extract.turns import said
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from tests.unit.flaky import OPERATOR, FlakyEmbedder

C = "chat:craig"
SAID = "I'm building a budget tracker with Flask and SQLite."


@pytest.mark.parametrize(
    "text",
    [
        f"User: {SAID}",
        f"Assistant: {SAID}",
        f"assistant:{SAID}",
        f"  SYSTEM : {SAID}",
        f"Human:\t{SAID}",
        f"{ROLE_PLACEHOLDER} {SAID}",
    ],
)
def test_a_leading_role_label_is_left_out(text: str) -> None:
    assert said(text) == SAID


@pytest.mark.parametrize(
    "text",
    [
        SAID,
        "Error: the connection pool is exhausted.",
        "Note: the user prefers tabs.",
        "The user: a person who asked.",  # not at the start
        "Username: craig",
        "User:",  # nothing said: the label is the whole text
        f"{ROLE_PLACEHOLDER}   ",
    ],
)
def test_text_without_a_role_label_is_as_it_was(text: str) -> None:
    assert said(text) == text


def test_only_the_leading_label_goes() -> None:
    text = f"User: {SAID}\nAssistant: noted."
    assert said(text) == f"{SAID}\nAssistant: noted."


def _stored(service: Hippocampus, memory_id: str) -> np.ndarray:
    return service.store.get_vectors(C, [memory_id])[memory_id]


def test_a_turn_is_embedded_without_its_label_and_stored_with_it(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    turn = NewMemory(content=f"User: {SAID}", conversation_id="c1", speaker="user")
    memory = flaky_service.remember(C, turn.model_copy(update={"source": OPERATOR})).memory
    assert memory is not None
    assert memory.content == f"User: {SAID}"
    own = flaky_embedder.encode([SAID])[0]
    np.testing.assert_allclose(_stored(flaky_service, memory.id), own, atol=1e-6)
    labelled = flaky_embedder.encode([f"User: {SAID}"])[0]
    assert not np.allclose(labelled, own)


def test_an_assistant_turn_is_embedded_without_the_placeholder_its_label_became(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    reply = "Flask keeps it small; start with the transaction model."
    out = flaky_service.remember_many(
        C, [NewMemory(content=f"Assistant: {reply}", speaker="assistant", source=OPERATOR)]
    )
    memory = out[0].memory
    assert memory is not None and memory.content.startswith(ROLE_PLACEHOLDER)
    np.testing.assert_allclose(
        _stored(flaky_service, memory.id), flaky_embedder.encode([reply])[0], atol=1e-6
    )


def test_an_edit_and_re_embedding_leave_the_label_out_too(
    flaky_service: Hippocampus, flaky_embedder: FlakyEmbedder
) -> None:
    flaky_embedder.down = True
    memory = flaky_service.remember(C, NewMemory(content=f"User: {SAID}", source=OPERATOR)).memory
    assert memory is not None and flaky_service.store.get_vectors(C, [memory.id]) == {}
    flaky_embedder.down = False
    assert flaky_service.reindex(C) == 1
    np.testing.assert_allclose(
        _stored(flaky_service, memory.id), flaky_embedder.encode([SAID])[0], atol=1e-6
    )

    edited = "I switched the budget tracker to PostgreSQL."
    flaky_service.update(C, memory.id, MemoryPatch(content=f"User: {edited}"))
    np.testing.assert_allclose(
        _stored(flaky_service, memory.id), flaky_embedder.encode([edited])[0], atol=1e-6
    )


def test_a_turn_label_is_no_concept_of_the_turn(flaky_service: Hippocampus) -> None:
    turns = [
        NewMemory(content=f"User: {SAID}", speaker="user", source=OPERATOR),
        NewMemory(
            content="Assistant: Flask keeps the budget tracker small.",
            speaker="assistant",
            source=OPERATOR,
        ),
    ]
    user, assistant = (o.memory for o in flaky_service.remember_many(C, turns))
    assert user is not None and assistant is not None
    assert assistant.content.startswith(ROLE_PLACEHOLDER)
    for memory in (user, assistant):
        read = memory.retrieval
        assert "budget tracker" in read.concepts
        words = {w for name in [*read.concepts, *read.triggers] for w in name.split()}
        assert not words & {"user", "assistant", "role", "marker", "remove"}
    hubs = {h.name for h in flaky_service.store.match_hubs(C, ["user", "role marker", "marker"])}
    assert not hubs


ECHO = "Sounds good, I will set up the Trello board tonight and share it tomorrow."


def _turn(label: str, speaker: str | None, text: str = ECHO) -> NewMemory:
    return NewMemory(
        content=f"{label}: {text}", speaker=speaker, conversation_id="c1", source=OPERATOR
    )


def test_the_assistant_echoing_the_user_is_a_turn_of_its_own(flaky_service: Hippocampus) -> None:
    # Without their labels the two embed alike, and their words are the same.
    first = flaky_service.remember(C, _turn("User", "user"))
    echo = flaky_service.remember(C, _turn("Assistant", "assistant"))
    assert first.created and echo.created and echo.duplicate_of is None
    out = flaky_service.remember_many(
        C, [_turn("User", "user", "Ok!"), _turn("Assistant", "assistant", "Ok!")]
    )
    assert all(o.created and o.duplicate_of is None for o in out)


def test_the_same_words_said_by_two_speakers_are_two_memories(flaky_service: Hippocampus) -> None:
    said_by = [NewMemory(content=ECHO, speaker=s, source=OPERATOR) for s in ("user", "assistant")]
    first, second = (flaky_service.remember(C, item) for item in said_by)
    assert first.created and second.created and second.duplicate_of is None
    again = flaky_service.remember_many(C, [*said_by, *said_by])  # stored, then within the batch
    assert first.memory is not None and second.memory is not None
    assert [o.duplicate_of for o in again] == [first.memory.id, second.memory.id] * 2
    fresh = flaky_service.remember_many(
        C,
        [
            NewMemory(content="Ok!", speaker=s, source=OPERATOR)
            for s in ("user", "assistant", "user")
        ],
    )
    assert [o.created for o in fresh] == [True, True, False]
    assert fresh[0].memory is not None and fresh[2].duplicate_of == fresh[0].memory.id


def test_a_speaker_repeating_themselves_is_still_a_repeat(flaky_service: Hippocampus) -> None:
    first = flaky_service.remember(C, _turn("User", "user"))
    assert first.memory is not None
    exact = flaky_service.remember(C, _turn("user", "User"))  # labels and speakers in any case
    assert not exact.created and exact.duplicate_of == first.memory.id
    near = flaky_service.remember(C, _turn("Human", "user"))  # another label: alike by vector
    assert not near.created and near.duplicate_of == first.memory.id
    unnamed = flaky_service.remember(C, NewMemory(content=ECHO, source=OPERATOR))  # no speaker
    assert not unnamed.created and unnamed.duplicate_of == first.memory.id
