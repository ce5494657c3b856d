"""A standing instruction comes back with the requests it governs (real MiniLM).

"Always give amounts in euros when I ask about pricing" is said once; weeks
later "what does the starter plan cost?" shares none of its words and little of
its meaning: most of the rule says what to do, not when. The rule is embedded
leaning toward its scope, so such a request finds it more similar than its
text alone would be, while a question about the rule itself still finds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hippocampus.embed import SentenceTransformerEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

pytestmark = pytest.mark.model

CHAT = "persona:budget"
EUROS = "Always give amounts in euros when I ask about pricing."
VERSIONS = "Always include version numbers when I ask about software dependencies."
TURNS = [
    ("user", "I'm building a budget tracker with Flask and SQLite; help me plan sprint one."),
    ("assistant", "Sprint one: registration, login and the transactions table; then analytics."),
    ("user", EUROS),
    ("user", "Can you help me hash passwords before they are stored in the users table?"),
    ("assistant", "Use generate_password_hash at sign-up and check_password_hash at login."),
    ("user", VERSIONS),
    ("user", "I want to add a category column to the transactions table."),
    ("assistant", "Write an Alembic migration adding category VARCHAR(50), default 'other'."),
    ("user", "The hosting plan on Render costs 7 dollars a month for the starter instance."),
    ("assistant", "The starter instance holds a few hundred users; upgrade when it slows."),
    ("user", "My first sprint ends on March 29 and the MVP deadline is April 15."),
]
IN_SCOPE = [
    ("What does the starter plan cost?", EUROS),
    ("What is the price of the hosting?", EUROS),
    ("How much would a bigger server cost us?", EUROS),
    ("What packages does my app depend on?", VERSIONS),
]
ABOUT_THE_RULE = [
    ("What did I ask you about version numbers?", VERSIONS),
    ("Which currency did I want amounts in?", EUROS),
]


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
    minilm: SentenceTransformerEmbedder,
    spacy_extractor: SpacyConceptExtractor,
) -> Iterator[Hippocampus]:
    svc = Hippocampus(
        EmbeddedStore(tmp_path_factory.mktemp("rules") / "data"), minilm, spacy_extractor
    )
    start = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    svc.remember_many(
        CHAT,
        [
            NewMemory(
                id=f"turn-{i}",
                content=text,
                category="conversation",
                conversation_id="budget",
                speaker=speaker,
                occurred_at=start + timedelta(minutes=i),
            )
            for i, (speaker, text) in enumerate(TURNS)
        ],
    )
    try:
        yield svc
    finally:
        svc.close()


def _rule_hit(service: Hippocampus, query: str, rule: str) -> tuple[int, float]:
    rule_id = f"turn-{[text for _, text in TURNS].index(rule)}"
    hits = service.recall(CHAT, query, limit=len(TURNS), recipe="DENSE", learn=False).hits
    rank = [h.memory.id for h in hits].index(rule_id) + 1
    similarity = hits[rank - 1].similarity
    assert similarity is not None
    return rank, similarity


@pytest.mark.parametrize(("query", "rule"), IN_SCOPE)
def test_a_request_in_a_rules_scope_finds_it_closer_than_its_words_alone(
    service: Hippocampus, minilm: SentenceTransformerEmbedder, query: str, rule: str
) -> None:
    rank, similarity = _rule_hit(service, query, rule)
    q, own = minilm.encode([query, rule])
    assert similarity >= float(q @ own) + 0.04
    assert rank <= 2


@pytest.mark.parametrize(("query", "rule"), ABOUT_THE_RULE)
def test_a_question_about_the_rule_itself_still_finds_it_first(
    service: Hippocampus, query: str, rule: str
) -> None:
    rank, _ = _rule_hit(service, query, rule)
    assert rank == 1
