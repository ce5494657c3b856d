"""Recall leans to the turns of a speaker the query names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hippocampus.extract import SpacyConceptExtractor
from hippocampus.retrieve.config import ASSOCIATIVE
from hippocampus.retrieve.fusion import could_name_speaker, speakers_named
from hippocampus.service import Hippocampus
from tests.unit.retrieve.turns import hashing_service, remember_turns

C = "persona:speakers"

# The asker's own decision, and replies that talk about the same things at length.
TURNS = [
    ("user", "I decided the ledger goes in SQLite: one file, no server."),
    (
        "assistant",
        "SQLite for the ledger database is a fine choice: a single file database, "
        "no database server, and the ledger database backs up by copying the file.",
    ),
    ("user", "Weekly reports should be emailed every Monday morning."),
    (
        "assistant",
        "The database choice affects the reports: a ledger database in one file "
        "makes weekly database exports simple.",
    ),
]
# Other talk, from both sides, so that the query's best matches have a spread.
TURNS += [
    ("user" if i % 2 else "assistant", text)
    for i, text in enumerate(
        [
            "The budget view groups spending by category and by month.",
            "Charts render with a small plotting library on the dashboard.",
            "Login uses sessions with a secure cookie and a short expiry.",
            "Exports go out as CSV with amounts rounded to cents.",
            "Tests run on every push, and the coverage report is kept.",
            "Deployment is one container behind a reverse proxy.",
            "Recurring payments are entered once and repeat monthly.",
            "Currency amounts are stored as integers of cents.",
        ]
    )
]
QUERY = "which ledger database did I decide on"


@pytest.fixture
def service(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    yield from hashing_service(tmp_path / "data", spacy_extractor)


def _remember(svc: Hippocampus, speakers: list[str | None]) -> list[str]:
    turns = [(speaker, text) for speaker, (_, text) in zip(speakers, TURNS, strict=True)]
    return remember_turns(svc, C, turns, None)


def test_the_first_person_names_the_user_and_a_label_names_its_speaker() -> None:
    both = {"user", "assistant"}
    assert speakers_named("which database did I decide on", both) == {"user"}
    assert speakers_named("what did my sister say", both) == {"user"}
    assert speakers_named("what did the assistant recommend", both) == {"assistant"}
    assert speakers_named("When did Caroline's talk start?", {"Caroline", "Melanie"}) == {
        "Caroline"
    }
    assert speakers_named("how do backups work", both) == set()
    # "I" names nobody who is not the assistant's counterpart.
    assert speakers_named("what did I say", {"Caroline", "Melanie"}) == set()


@pytest.mark.parametrize(
    "query",
    [
        "Can you give me a summary of how my resume developed?",
        "Summarize what I learned about triangles",
        "can you summarise how I handled the database issues",
        "a quick recap of my budget tracker",
        "give me an overview of my reading goals",
        "sum up how I planned the trip",
    ],
)
def test_a_summary_in_the_first_person_names_no_side(query: str) -> None:
    both = {"user", "assistant"}
    assert speakers_named(query, both) == set()
    # A speaker named by label is still named.
    assert speakers_named(query + " with Caroline", {"Caroline", "user"}) == {"Caroline"}


def test_the_second_person_names_the_assistant_only_for_what_it_said_before() -> None:
    both = {"user", "assistant"}
    assert speakers_named("what did you recommend for caching", both) == {"assistant"}
    assert speakers_named("the retry policy you suggested", both) == {"assistant"}
    # Asking about both sides' turns names both: no side is leaned to.
    assert speakers_named("how did you recommend I structure my sprints", both) == both
    # A request for something now names nobody's earlier turns.
    assert speakers_named("can you recommend a caching library", both) == set()
    assert speakers_named("what would you suggest for caching", both) == set()
    assert speakers_named("what did you recommend", {"Caroline", "Melanie"}) == set()
    assert could_name_speaker("What did you recommend for caching?")
    assert not could_name_speaker("Can you recommend a caching library?")


def test_only_a_query_that_could_name_someone_looks_speakers_up() -> None:
    assert could_name_speaker("what did I decide")
    assert could_name_speaker("what did Melanie paint")
    assert not could_name_speaker("how do backups of the ledger work")
    assert not could_name_speaker("What backs up the ledger?")  # a question word only
    assert could_name_speaker("what did the assistant recommend")
    assert could_name_speaker("mine is broken")


def test_the_named_speakers_turns_gain_one_lean_and_pass_a_weaker_reply(
    service: Hippocampus,
) -> None:
    ids = _remember(service, [s for s, _ in TURNS])
    speaker = {mid: who for mid, (who, _) in zip(ids, TURNS, strict=True)}
    decision, long_reply, weak_reply = ids[0], ids[1], ids[3]
    # Without the walk or crowding, so that the lean is all that differs.
    direct = ASSOCIATIVE.model_copy(update={"graph": False, "crowding": 0.0})
    plain = direct.model_copy(update={"speaker_lean": 0.0})
    before = service.recall(C, QUERY, limit=len(ids), recipe=plain, learn=False)
    after = service.recall(C, QUERY, limit=len(ids), recipe=direct, learn=False)
    rank_before = [h.memory.id for h in before.hits]
    rank_after = [h.memory.id for h in after.hits]
    assert rank_before.index(decision) > rank_before.index(weak_reply)
    assert rank_after.index(decision) < rank_after.index(weak_reply)
    assert rank_after.index(long_reply) < rank_after.index(weak_reply)
    score_before = {h.memory.id: h.score for h in before.hits}
    gains = {h.memory.id: h.score - score_before[h.memory.id] for h in after.hits}
    assert all(gains[m] == 0.0 for m in gains if speaker[m] == "assistant")
    user_gains = {round(gains[m], 9) for m in gains if speaker[m] == "user"}
    assert len(user_gains) == 1 and user_gains.pop() > 0.0


def test_memories_without_speakers_are_ranked_as_before(service: Hippocampus) -> None:
    _remember(service, [None] * len(TURNS))
    plain = ASSOCIATIVE.model_copy(update={"speaker_lean": 0.0})
    without = service.recall(C, QUERY, limit=4, recipe=plain, learn=False)
    leaning = service.recall(C, QUERY, limit=4, learn=False)
    assert [(h.memory.id, h.score) for h in leaning.hits] == [
        (h.memory.id, h.score) for h in without.hits
    ]


def test_what_the_assistant_said_before_leans_to_its_turns(service: Hippocampus) -> None:
    ids = _remember(service, [s for s, _ in TURNS])
    speaker = {mid: who for mid, (who, _) in zip(ids, TURNS, strict=True)}
    query = "what did you recommend for the ledger database"
    direct = ASSOCIATIVE.model_copy(update={"graph": False})
    plain = direct.model_copy(update={"speaker_lean": 0.0})
    before = service.recall(C, query, limit=len(ids), recipe=plain, learn=False)
    after = service.recall(C, query, limit=len(ids), recipe=direct, learn=False)
    score_before = {h.memory.id: h.score for h in before.hits}
    gains = {h.memory.id: h.score - score_before[h.memory.id] for h in after.hits}
    assert all(gains[m] == 0.0 for m in gains if speaker[m] == "user")
    assert all(gains[m] > 0.0 for m in gains if speaker[m] == "assistant")
