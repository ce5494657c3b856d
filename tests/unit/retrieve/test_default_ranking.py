"""The default recipe with the real MiniLM model: the best direct match comes first.

The graph may lift what similarity missed, but a memory that matches the query
clearly better is not buried under a neighbour that one anchor reached, not on
the first recall and not after the same recall was repeated.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hippocampus.demo import load_demo
from hippocampus.embed import SentenceTransformerEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.retrieve.config import ASSOCIATIVE
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

pytestmark = pytest.mark.model

DEMO = "demo:ranking"
TEAM = "team:ranking"

# An engineering team's notes, in the spirit of the demo set: each query below has
# one memory that answers it and neighbours that share its words or hubs.
TEAM_NOTES = {
    "vault-secrets": (
        "decision",
        "Decision: all passwords, API tokens and other secrets are kept in HashiCorp Vault; "
        "services read them at start through the Vault agent, and nothing secret goes into "
        "environment files or the repository.",
    ),
    "refresh-cookie": (
        "bug_fix",
        "The refresh token cookie was missing the Secure and SameSite flags, so browsers "
        "sent it on cross-site requests. Set both flags and rotated every refresh token.",
    ),
    "tenacity-retry": (
        "code_snippet",
        "Retry calls to an external service with tenacity: @retry(wait=wait_exponential("
        "multiplier=0.5, max=10), stop=stop_after_attempt(5), retry=retry_if_exception_type("
        "httpx.TransportError)) around the client call.",
    ),
    "circuit-breaker": (
        "pattern",
        "Wrap each external dependency in a circuit breaker: after five failures in a row "
        "stop calling it for thirty seconds and fail fast, then let one trial call through "
        "before closing the circuit again.",
    ),
    "stripe-webhook": (
        "bug_fix",
        "Stripe webhook handler answered 500 when the external payment service sent an "
        "event type we did not know; the provider kept retrying the call for three days. "
        "Unknown events are now acknowledged and logged.",
    ),
    "token-expiry": (
        "insight",
        "Short-lived access tokens with a refresh token cut the damage of a leaked token; "
        "fifteen minutes is the expiry most of our API clients handle without trouble.",
    ),
    "api-rate-limit": (
        "outcome",
        "The partner API started returning 429 after we raised concurrency; calls to that "
        "service now go through a token bucket limited to 20 requests per second.",
    ),
}


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
    minilm: SentenceTransformerEmbedder,
    spacy_extractor: SpacyConceptExtractor,
) -> Iterator[Hippocampus]:
    svc = Hippocampus(
        EmbeddedStore(tmp_path_factory.mktemp("ranking") / "data"), minilm, spacy_extractor
    )
    load_demo(svc, DEMO)
    svc.remember_many(
        TEAM,
        [
            NewMemory(id=mid, category=category, content=content, source="demo")
            for mid, (category, content) in TEAM_NOTES.items()
        ],
    )
    try:
        yield svc
    finally:
        svc.close()


@pytest.mark.parametrize(
    ("collection", "query", "expected"),
    [
        (
            DEMO,
            "how should we change the database schema without downtime",
            "demo-migrations-expand-contract",
        ),
        (TEAM, "where do we keep passwords and API tokens", "vault-secrets"),
        (TEAM, "how should I retry calls to an external service", "tenacity-retry"),
    ],
)
def test_the_default_ranks_the_best_direct_match_first_and_keeps_it_there(
    service: Hippocampus, collection: str, query: str, expected: str
) -> None:
    first = service.recall(collection, query, limit=5, learn=False)
    assert first.hits[0].memory.id == expected
    best_similarity = max(h.similarity or -1.0 for h in first.hits)
    assert first.hits[0].similarity == pytest.approx(best_similarity)
    for _ in range(5):
        service.recall(collection, query, limit=5)
    service.flush_learning()
    again = service.recall(collection, query, limit=5, learn=False)
    assert [h.memory.id for h in again.hits] == [h.memory.id for h in first.hits]


def test_the_one_memory_with_a_rare_word_of_the_query_is_not_buried(service: Hippocampus) -> None:
    # "March" is in one demo memory alone ("broke the rolling deploy in March"),
    # which is no closer to the question than a dozen others that share no word
    # with it: the rare word's match comes first, as BM25 has it.
    query = "what broke in March"
    found = service.recall(DEMO, query, limit=10, learn=False)
    assert found.hits[0].memory.id == "demo-migrations-expand-contract"
    assert [h.memory.id for h in found.hits if h.lexical] == ["demo-migrations-expand-contract"]
    closer = [h for h in found.hits if (h.similarity or 0.0) > (found.hits[0].similarity or 0.0)]
    assert closer  # similarity alone would not have put it first
    bm25 = service.recall(DEMO, query, limit=1, recipe="BM25", learn=False)
    assert bm25.hits[0].memory.id == found.hits[0].memory.id


def test_dense_scores_are_cosines_and_bm25_scores_are_relative_to_the_best(
    service: Hippocampus,
) -> None:
    dense = service.recall(TEAM, "retry an external service", limit=3, recipe="DENSE", learn=False)
    for hit in dense.hits:
        assert hit.similarity is not None
        assert hit.score == pytest.approx(hit.similarity)
    bm25 = service.recall(TEAM, "retry an external service", limit=3, recipe="BM25", learn=False)
    assert bm25.hits[0].score == pytest.approx(1.0)
    top = bm25.hits[0].lexical
    assert top is not None
    for hit in bm25.hits:
        assert hit.lexical is not None
        assert hit.score == pytest.approx(hit.lexical / top)


def test_default_scores_are_similarities_raised_by_evidence(service: Hippocampus) -> None:
    # Crowding, weighed since, moves a similarity down or up before evidence
    # raises it (test_crowding.py); without it, a score is the similarity plus
    # what the words and the graph add.
    uncrowded = ASSOCIATIVE.model_copy(update={"crowding": 0.0})
    found = service.recall(
        TEAM, "how should I retry calls to an external service", recipe=uncrowded, learn=False
    )
    for hit in found.hits:
        assert hit.similarity is not None
        assert hit.score >= hit.similarity - 1e-9
        if hit.lexical is None and hit.graph is None:
            assert hit.score == pytest.approx(hit.similarity)
