"""Matching an associate context to hubs, and which paths it lets carry a result."""

from __future__ import annotations

from hippocampus.extract.base import Extraction
from hippocampus.model import Anchor, EdgeType, Expansion, GraphPath, PathStep
from hippocampus.retrieve.context import context_forms, through_context


def test_forms_add_the_extractors_lemmas_but_not_its_inferred_domains() -> None:
    forms = context_forms(
        ["migrations", "security"],
        [
            Extraction(domains=("database",), triggers=("migration",), concepts=("migration",)),
            Extraction(domains=("security",), triggers=("security",), concepts=()),
        ],
    )
    assert forms == {"migrations": "migrations", "migration": "migrations", "security": "security"}


def _path(anchor: tuple[str, str], *steps: tuple[EdgeType, str, str], strength: float) -> GraphPath:
    return GraphPath(
        anchor=Anchor(kind=anchor[0], name=anchor[1]),
        steps=[PathStep(type=t, weight=0.5, kind=k, name=n) for t, k, n in steps],
        strength=strength,
    )


def test_only_paths_through_memories_or_the_contexts_hubs_carry() -> None:
    direct = _path(("Concept", "postgre"), (EdgeType.ABOUT, "Memory", "m2"), strength=0.4)
    lemma = _path(("Trigger", "postgres"), (EdgeType.HAS_TRIGGER, "Memory", "m2"), strength=0.3)
    generic = _path(
        ("Concept", "pooling"),
        (EdgeType.ABOUT, "Memory", "m1"),
        (EdgeType.HAS_TRIGGER, "Trigger", "use"),
        (EdgeType.HAS_TRIGGER, "Memory", "m2"),
        strength=0.2,
    )
    learned = _path(
        ("Concept", "pooling"),
        (EdgeType.ABOUT, "Memory", "m1"),
        (EdgeType.ASSOCIATED, "Memory", "m2"),
        strength=0.1,
    )
    origin = {
        ("Concept", "postgre"): "postgres",
        ("Trigger", "postgres"): "postgres",
        ("Concept", "pooling"): "pooling",
    }
    e = Expansion(memory_id="m2", strength=1.0, anchors=3, paths=[direct, lemma, generic, learned])
    reach = through_context(e, origin)
    assert reach is not None
    kept = reach.expansion()
    assert kept.paths == [direct, lemma, learned]
    # Two forms of one context word count once, at the better of the two.
    assert kept.anchors == 2
    assert abs(kept.strength - (0.4 + 0.1)) < 1e-9
    only_generic = Expansion(memory_id="m3", strength=0.2, anchors=1, paths=[generic])
    assert through_context(only_generic, origin) is None


def test_a_holder_of_a_context_hub_passes_and_a_memory_reached_through_one_needs_the_gate() -> None:
    origin = {("Trigger", "migration"): "migrations"}
    held = _path(("Trigger", "migration"), (EdgeType.HAS_TRIGGER, "Memory", "m1"), strength=0.01)
    reach = through_context(
        Expansion(memory_id="m1", strength=0.01, anchors=1, paths=[held]), origin
    )
    assert reach is not None and reach.held and reach.passes(0.5)
    # Through a holder and a learned edge: 0.5 × 0.5 (the steps' weights, damping 0.9 each).
    hop = _path(
        ("Trigger", "migration"),
        (EdgeType.HAS_TRIGGER, "Memory", "m1"),
        (EdgeType.ASSOCIATED, "Memory", "m2"),
        strength=0.005,
    )
    beyond = through_context(
        Expansion(memory_id="m2", strength=0.005, anchors=1, paths=[hop]), origin, damping=0.9
    )
    assert beyond is not None and not beyond.held
    assert abs(beyond.weight - 0.5 * 0.9 * 0.5 * 0.9) < 1e-9
    assert not beyond.passes(0.5) and beyond.passes(0.2)
