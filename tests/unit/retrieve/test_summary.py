"""Recall results as the "Related knowledge already captured" block."""

from __future__ import annotations

from datetime import UTC, datetime

from hippocampus.model import Memory, RecallHit
from hippocampus.retrieve.summary import category_label, context_summary, title_and_snippet

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def _hit(content: str, category: str, score: float, similarity: float | None) -> RecallHit:
    memory = Memory(
        id="m",
        collection="c",
        content=content,
        category=category,
        created_at=T0,
        updated_at=T0,
        content_hash="h",
    )
    return RecallHit(memory=memory, score=score, similarity=similarity)


def test_the_block_lists_category_title_score_and_the_total() -> None:
    hits = [
        _hit(
            "Village Church History. The village church was built in 1732 by the parish.",
            "history",
            1.4,
            0.87,
        ),
        _hit(
            "Work Item: Local flora survey\n\nDescription:\nThe village is surrounded by old "
            "oak trees.\n\nStatus:\nOPEN",
            "work_item",
            0.74,
            None,
        ),
    ]
    assert context_summary(hits, 12) == (
        "Related knowledge already captured:\n"
        "- [History] Village Church History. (score: 0.87): The village church was built in "
        "1732 by the parish.\n"
        "- [Work Item] Local flora survey (score: 0.74): The village is surrounded by old oak "
        "trees.\n"
        "\n"
        "Total entries in domain: 12"
    )


def test_an_empty_result_says_so() -> None:
    assert context_summary([], 3) == (
        "Related knowledge already captured:\n(nothing related found)\n\nTotal entries in domain: 3"
    )


def test_results_below_the_bar_are_counted_never_called_nothing() -> None:
    below = _hit("Retry storms. Jitter spreads retries.", "pattern", 1.67, 0.55)
    alone = context_summary([], 9, left_out=1, min_score=0.7)
    assert "nothing related found" not in alone
    assert alone == (
        "Related knowledge already captured:\n"
        "(1 result less similar than 0.70 not shown)\n\nTotal entries in domain: 9"
    )
    beside = context_summary([below], 9, left_out=2, min_score=0.5)
    assert beside.splitlines()[1].startswith("- [Pattern] Retry storms. (score: 0.55)")
    assert beside.splitlines()[2] == "(2 more results less similar than 0.50 not shown)"


def test_long_text_is_cut_on_a_word_with_an_ellipsis() -> None:
    title, snippet = title_and_snippet("word " * 40 + "\nsecond line " * 30)
    assert title.endswith("...") and len(title) <= 80
    assert snippet.startswith("second line") and snippet.endswith("...")
    assert len(snippet) <= 120


def test_category_labels_read_as_words() -> None:
    assert category_label("bug_fix") == "Bug Fix"
    assert category_label("code-snippet") == "Code Snippet"
