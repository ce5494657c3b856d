"""Questions about the present, and the newer of two memories first."""

from __future__ import annotations

import math

import pytest

from hippocampus.retrieve.config import BM25, DEFAULT_RECIPE, DENSE, RECIPES, SEED_COMPOSITE
from hippocampus.retrieve.present import asks_about_present, present_first


@pytest.mark.parametrize(
    ("query", "present"),
    [
        ("can we deploy on Friday", True),
        ("Can we deploy on Fridays?", True),
        ("do we still use Redis for sessions", True),
        ("what do we use now for CI", True),
        ("which CI do we use", True),
        ("what is the rule for Friday deploys", True),
        ("what's our session store", True),
        ("how do we ship beta builds", True),
        ("is the deploy freeze still on", True),
        ("who owns the billing service these days", True),
        ("current CI setup", True),
        ("are we allowed to deploy on Friday", True),
        ("Redis session storage", False),
        ("what broke in March", False),
        ("why did we stop using Redis", False),
        ("what did we use for CI in 2023", False),
        ("when was the deploy freeze introduced", False),
        ("what did Tom fix last week", False),
        ("what CI did we use to have", False),
        ("which service was moved to Fly.io", False),
        ("Have I ever practiced conditional probability problems before?", False),
        ("have we ever deployed on a Friday", False),
    ],
)
def test_questions_about_the_present_are_told_from_the_rest(query: str, present: bool) -> None:
    assert asks_about_present(query) is present


def test_a_superseding_memory_moves_just_above_the_one_it_supersedes() -> None:
    scores = {"june-rule": 1.69, "other": 1.2, "october-lift": 0.96, "unrelated": 0.5}
    out = present_first(scores, {"june-rule": ["october-lift"]})
    assert sorted(out, key=lambda m: -out[m]) == ["october-lift", "june-rule", "other", "unrelated"]
    assert out["october-lift"] == math.nextafter(1.69, math.inf)
    assert {m: out[m] for m in ("june-rule", "other", "unrelated")} == {
        "june-rule": 1.69,
        "other": 1.2,
        "unrelated": 0.5,
    }


def test_a_superseding_memory_already_above_keeps_its_score() -> None:
    scores = {"new": 2.0, "old": 1.0}
    assert present_first(scores, {"old": ["new"]}) == scores


def test_a_chain_of_supersedings_ranks_newest_first() -> None:
    scores = {"v1": 3.0, "v2": 2.0, "v3": 1.0, "x": 2.5}
    out = present_first(scores, {"v1": ["v2"], "v2": ["v3"]})
    assert sorted(out, key=lambda m: -out[m]) == ["v3", "v2", "v1", "x"]


def test_superseders_outside_the_results_are_left_out() -> None:
    assert present_first({"old": 1.0}, {"old": ["gone"]}) == {"old": 1.0}


def test_the_single_signals_and_the_seed_composite_rank_by_their_signal_alone() -> None:
    assert RECIPES[DEFAULT_RECIPE].present_first
    assert not any(r.present_first for r in (BM25, DENSE, SEED_COMPOSITE))
