"""Time in questions, with the real MiniLM model: the default prefers what happened
when the question says, and says so."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from hippocampus.demo import DEMO_MEMORIES
from hippocampus.embed import SentenceTransformerEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory, TimeWindow
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

pytestmark = pytest.mark.model

TEAM = "team:dated"

# Three fixes by one person, months apart, among the demo's notes dated a week
# or so apart over the same months: a question names the person, the verb and a
# month, and only the month tells the fixes apart. By meaning alone the April fix
# (a CSV export) is the least like "what did Tom fix".
FIXES = {
    "fix-february": (
        datetime(2025, 2, 11, 10, tzinfo=UTC),
        "Tom fixed the flaky login test: the session cookie expired between two steps "
        "of the test, so the test now refreshes it first.",
    ),
    "fix-april": (
        datetime(2025, 4, 15, 16, tzinfo=UTC),
        "Tom fixed the CSV export, which dropped every row with a comma inside a quoted "
        "field; the exporter now uses the csv module's quoting.",
    ),
    "fix-july": (
        datetime(2025, 7, 8, 9, tzinfo=UTC),
        "Tom fixed the payment client's retry loop, which never gave up; it now stops "
        "after five attempts and reports the last error.",
    ),
}


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory,
    minilm: SentenceTransformerEmbedder,
    spacy_extractor: SpacyConceptExtractor,
) -> Iterator[Hippocampus]:
    svc = Hippocampus(
        EmbeddedStore(tmp_path_factory.mktemp("time") / "data"), minilm, spacy_extractor
    )
    start = datetime(2025, 1, 6, tzinfo=UTC)
    notes = [
        m.model_copy(update={"occurred_at": start + timedelta(days=6 * i)})
        for i, m in enumerate(DEMO_MEMORIES)
    ]
    fixes = [
        NewMemory(id=mid, category="bug_fix", content=content, occurred_at=at)
        for mid, (at, content) in FIXES.items()
    ]
    svc.remember_many(TEAM, notes + fixes)
    try:
        yield svc
    finally:
        svc.close()


@pytest.mark.parametrize(
    ("month", "number", "expected"),
    [("February", 2, "fix-february"), ("April", 4, "fix-april"), ("July", 7, "fix-july")],
)
def test_the_fix_made_in_the_month_asked_about_comes_first_and_says_time_moved_it(
    service: Hippocampus, month: str, number: int, expected: str
) -> None:
    found = service.recall(TEAM, f"what did Tom fix in {month}", limit=5, learn=False)
    assert found.times == [
        TimeWindow(
            phrase=f"in {month}",
            start=datetime(2025, number, 1, tzinfo=UTC),
            end=datetime(2025, number + 1, 1, tzinfo=UTC),
        )
    ]
    assert found.hits[0].memory.id == expected
    assert found.hits[0].time is not None and found.hits[0].time > 0.0
    others = [h for h in found.hits if h.memory.id in FIXES and h.memory.id != expected]
    assert len(others) == 2
    assert all(h.time is None for h in others)  # the other fixes, still listed, unmoved


def test_without_a_time_the_fixes_rank_by_meaning_alone(service: Hippocampus) -> None:
    found = service.recall(TEAM, "what did Tom fix", limit=5, learn=False)
    assert found.times == []
    assert all(h.time is None for h in found.hits)
    assert {h.memory.id for h in found.hits[:3]} == set(FIXES)
    # Only one month's fix can lead by meaning: the other months needed time.
    assert found.hits[2].memory.id == "fix-april"


def test_a_time_relative_to_now_counts_from_the_recalls_now(service: Hippocampus) -> None:
    now = datetime(2025, 7, 9, 12, tzinfo=UTC)
    found = service.recall(TEAM, "what did Tom fix yesterday", limit=5, learn=False, now=now)
    assert found.times == [
        TimeWindow(
            phrase="yesterday",
            start=datetime(2025, 7, 8, tzinfo=UTC),
            end=datetime(2025, 7, 9, tzinfo=UTC),
        )
    ]
    assert found.hits[0].memory.id == "fix-july"


def test_a_time_within_which_none_of_the_best_happened_moves_nothing(
    service: Hippocampus,
) -> None:
    plain = service.recall(TEAM, "what did Tom fix", limit=5, learn=False)
    timed = service.recall(TEAM, "what did Tom fix in 2019", limit=5, learn=False)
    assert [t.phrase for t in timed.times] == ["in 2019"]
    assert all(h.time is None for h in timed.hits)
    assert [h.memory.id for h in timed.hits][:3] == [h.memory.id for h in plain.hits][:3]


def test_other_recipes_do_not_weigh_time(service: Hippocampus) -> None:
    found = service.recall(TEAM, "what did Tom fix in April", limit=5, recipe="DENSE", learn=False)
    assert found.times == []
    assert all(h.time is None for h in found.hits)
