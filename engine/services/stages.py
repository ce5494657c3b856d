"""Work through two stages on their own threads, handed back in order.

Ingest is three stages over batches of memories: extracting concepts (spaCy),
embedding (torch) and judging and writing (the store). Run back to back, one
core idles while the other works, except while torch runs on both. Run on
threads, the batches flow: while the caller writes batch k, one thread embeds
the batches after it and another extracts the ones after those. torch and
spaCy's matrix products release the GIL, and so does SQLite while it writes,
so the stages share the cores rather than take turns.

The second stage takes every item waiting for it at once (up to a number of
texts), so its work can be regrouped: the embedder sorts a whole run of
batches by length, where one batch alone would pad its notes to its longest.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")
T = TypeVar("T")


@dataclass(frozen=True)
class _Failed:
    """A stage raised on the item at this place in the order."""

    error: BaseException


class _Budget:
    """How many texts may be between the source and the consumer at once.

    One item larger than the whole budget still goes through, alone.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._used = 0
        self._closed = False
        self._cond = threading.Condition()

    def take(self, n: int) -> bool:
        """Wait for room for ``n``; ``False`` once the budget is closed."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._closed or self._used == 0 or self._used + n <= self._limit
            )
            if self._closed:
                return False
            self._used += n
            return True

    def give(self, n: int) -> None:
        with self._cond:
            self._used -= n
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed


@dataclass
class _Slot(Generic[T]):
    size: int
    value: T | _Failed


def staged(
    source: Iterable[S],
    first: Callable[[S], T],
    second: Callable[[list[T]], None],
    *,
    size: Callable[[S], int],
    ahead: int,
    group: int,
    name: str = "hippo-stage",
) -> Generator[T, None, None]:
    """Run ``first`` on each item of ``source`` on one thread and ``second`` on
    runs of its results on another; yield each result, in order, once both have.

    Args:
        source: the items (read on the first stage's thread).
        first: makes an item's result; what it raises is raised to the consumer
            when that item's turn comes, and ends the run there.
        second: completes a run of results in place (all that wait for it, at
            most ``group`` texts unless one item alone has more); what it raises
            is raised at the turn of the run's first item.
        size: an item's texts, for ``ahead`` and ``group``.
        ahead: the most texts read from ``source`` and not yet handed back
            (one item larger than this goes through alone).
        group: the most texts ``second`` takes at once.
        name: the threads' names' prefix.

    Yields:
        Each item's result, in the order of ``source``. The item a result came
        from counts against ``ahead`` until the consumer asks for the next one,
        so the consumer's own work on it is part of the pipeline.
    """
    budget = _Budget(ahead)
    # None ends a queue.
    firsts: queue.SimpleQueue[_Slot[T] | None] = queue.SimpleQueue()
    done: queue.SimpleQueue[_Slot[T] | None] = queue.SimpleQueue()
    threads = [
        threading.Thread(
            target=_run_first,
            args=(source, first, size, budget, firsts),
            name=f"{name}-1",
            daemon=True,
        ),
        threading.Thread(
            target=_run_second,
            args=(second, group, budget, firsts, done),
            name=f"{name}-2",
            daemon=True,
        ),
    ]
    for thread in threads:
        thread.start()
    try:
        while True:
            got = done.get()
            if got is None:
                return
            if isinstance(got.value, _Failed):
                raise got.value.error
            yield got.value
            budget.give(got.size)
    finally:
        # The consumer stopped (finished, raised, or let go of the iterator):
        # the first stage stops reading, the second finishes what it holds.
        budget.close()
        for thread in threads:
            thread.join()


def _run_first(
    source: Iterable[S],
    first: Callable[[S], T],
    size: Callable[[S], int],
    budget: _Budget,
    firsts: queue.SimpleQueue[_Slot[T] | None],
) -> None:
    """The first stage's thread: ``first`` on each item of ``source``, as the
    budget lets it read ahead, into ``firsts`` (``None`` ends it)."""
    try:
        for item in source:
            n = size(item)
            if not budget.take(n):
                return
            try:
                slot: _Slot[T] = _Slot(n, first(item))
            except BaseException as e:  # raised to the consumer at this item's turn
                firsts.put(_Slot(n, _Failed(e)))
                return
            firsts.put(slot)
    except BaseException as e:  # the source itself failed
        firsts.put(_Slot(0, _Failed(e)))
    finally:
        firsts.put(None)


def _run_second(
    second: Callable[[list[T]], None],
    group: int,
    budget: _Budget,
    firsts: queue.SimpleQueue[_Slot[T] | None],
    done: queue.SimpleQueue[_Slot[T] | None],
) -> None:
    """The second stage's thread: ``second`` on each run of what waits in
    ``firsts`` (at most ``group`` texts), passed on to ``done`` in order."""
    ended = False
    while not ended:
        got = firsts.get()
        if got is None:
            break
        run = [got]
        texts = got.size
        while texts < group:
            try:
                more = firsts.get_nowait()
            except queue.Empty:
                break
            if more is None:
                ended = True
                break
            run.append(more)
            texts += more.size
        if not budget.closed:  # else the consumer is gone: drain, do nothing
            _complete(run, second, done)
    done.put(None)


def _complete(
    run: list[_Slot[T]],
    second: Callable[[list[T]], None],
    done: queue.SimpleQueue[_Slot[T] | None],
) -> None:
    """Run ``second`` on the results in ``run`` and pass the run on, in order.

    A failure of the first stage can only close a run (it ends the source), so
    the results before it are completed and handed on like any others.
    """
    values = [slot.value for slot in run if not isinstance(slot.value, _Failed)]
    if values:
        try:
            second(values)
        except BaseException as e:  # raised at the turn of the run's first item
            done.put(_Slot(run[0].size, _Failed(e)))
            return
    for slot in run:
        done.put(slot)
