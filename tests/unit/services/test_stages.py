"""Two stages on their own threads, results in order (engine.services.stages)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from hippocampus.services.stages import staged


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("test-stage")]


def test_results_come_back_in_order_with_both_stages_run() -> None:
    runs: list[list[int]] = []

    def second(run: list[list[int]]) -> None:
        runs.append([r[0] for r in run])
        for r in run:
            r.append(r[0] * 10)

    got = list(
        staged(
            range(20), lambda i: [i], second, size=lambda _: 1, ahead=6, group=3, name="test-stage"
        )
    )
    assert got == [[i, i * 10] for i in range(20)]
    assert all(len(run) <= 3 for run in runs)
    assert [i for run in runs for i in run] == list(range(20))
    assert not _threads()


def test_the_second_stage_takes_what_waits_for_it_at_once() -> None:
    started = threading.Event()
    queued = threading.Event()
    runs: list[list[int]] = []

    def first(i: int) -> int:
        if i == 1:
            started.wait(timeout=10)  # the second stage holds item 0 alone
        return i

    def second(run: list[int]) -> None:
        runs.append(run)
        started.set()
        queued.wait(timeout=10)  # while the rest queue up behind it

    def source() -> Iterator[int]:
        yield from range(6)
        queued.set()

    got = list(
        staged(source(), first, second, size=lambda _: 1, ahead=10, group=10, name="test-stage")
    )
    assert got == list(range(6))
    assert runs == [[0], [1, 2, 3, 4, 5]]


def test_the_first_stage_reads_no_further_ahead_than_allowed() -> None:
    read: list[int] = []

    def source() -> Iterator[int]:
        for i in range(100):
            read.append(i)
            yield i

    results = staged(
        source(),
        lambda i: i,
        lambda run: None,
        size=lambda _: 2,
        ahead=8,
        group=4,
        name="test-stage",
    )
    assert next(results) == 0
    threading.Event().wait(0.2)  # time for the stages to run as far ahead as they may
    assert len(read) <= 5  # four in flight (8 texts), and the one waiting for room
    results.close()
    assert not _threads()


def test_an_item_larger_than_the_whole_budget_goes_through_alone() -> None:
    got = list(
        staged(
            [1, 50, 2],
            lambda i: i,
            lambda run: None,
            size=lambda i: i,
            ahead=10,
            group=10,
            name="test-stage",
        )
    )
    assert got == [1, 50, 2]


def test_a_first_stage_failure_comes_at_its_turn_after_the_items_before() -> None:
    def first(i: int) -> int:
        if i == 3:
            raise ValueError("bad item 3")
        return i

    results = staged(
        range(10), first, lambda run: None, size=lambda _: 1, ahead=4, group=2, name="test-stage"
    )
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="bad item 3"):
        next(results)
    assert not _threads()


def test_a_second_stage_failure_comes_at_the_turn_of_its_run() -> None:
    def second(run: list[int]) -> None:
        if 4 in run:
            raise RuntimeError("embedding broke")

    results = staged(
        range(10), lambda i: i, second, size=lambda _: 1, ahead=1, group=1, name="test-stage"
    )
    assert [next(results) for _ in range(4)] == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="embedding broke"):
        next(results)
    assert not _threads()


def test_a_failing_source_fails_at_its_place() -> None:
    def source() -> Iterator[int]:
        yield 0
        yield 1
        raise OSError("the file went away")

    results = staged(
        source(),
        lambda i: i,
        lambda run: None,
        size=lambda _: 1,
        ahead=4,
        group=4,
        name="test-stage",
    )
    assert [next(results), next(results)] == [0, 1]
    with pytest.raises(OSError, match="went away"):
        next(results)
    assert not _threads()
