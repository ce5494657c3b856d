"""Admission control: only a few heavy requests execute at once; the others wait
their turn in the event loop.

The engine is synchronous and FastAPI runs each request in a worker thread. On
the embedded store a search, a conversation message or a remember is Python,
spaCy and numpy work under one interpreter lock, and every write goes through
the store's one writer. With sixteen such requests executing at once, each
runnable thread gets the interpreter in turn: a cheap engagement waits behind
sixteen searches for its time slices, and a write that holds the store's write
lock waits for the interpreter while every other write waits for that lock.
Measured with ``bench/load.py`` at 16 clients, an engagement then spent 260 of
its 410 ms waiting for the write lock, whose holders spent three quarters of the
time they held it waiting for the interpreter.

So heavy requests take a slot first, and only ``slots`` of them execute at once;
requests that do little work (engagement, feedback, reads by id, forgetting) take
none and run as they come, so they and the writer find few threads to share the
interpreter with. A waiting request holds no worker thread (it waits in the
event loop), so a queue of them cannot starve the cheap ones of threads either.

Waiting requests go in order of arrival, shifted by their :class:`Lane`'s lead:
a conversation message goes ahead of other heavy requests that arrived up to
half a second earlier (:data:`LEAD_S`), because a chat waits on each message's
insights, and they are worth less the later they come. Every waiting request
is served eventually: one that has waited longer than the lead goes before any
message that arrives after that. A request that waits longer than
``max_wait_s`` is answered 503 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from enum import Enum

from hippocampus.api.errors import OverloadedError


class Lane(Enum):
    """Which queue order a heavy request takes."""

    CONVERSATION = "conversation"
    """A conversation message: a chat waits on its insights."""
    DEFAULT = "default"
    """Every other heavy request: recall, association, record search, remembering,
    re-embedding, and reads that compute over a whole collection."""


LEAD_S: dict[Lane, float] = {Lane.CONVERSATION: 0.0, Lane.DEFAULT: 0.5}
"""How much later than a waiting request of that lane a conversation message may
arrive and still go first (seconds)."""


class Admission:
    """A limit on concurrently executing heavy requests, with an ordered queue.

    Used from one event loop: its state is touched only by coroutines of that
    loop, never by worker threads, so it needs no lock.

    Args:
        slots: how many heavy requests execute at once; 0 admits every request
            at once (no limit).
        max_wait_s: how long a request may wait for a slot before it is refused.
        clock: seconds, monotonic; a test may pass its own.
    """

    def __init__(
        self, slots: int, *, max_wait_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if slots < 0:
            raise ValueError("slots must be 0 (no limit) or more")
        self.slots = slots
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._free = slots
        # (turn, arrival number, future); a future set to None hands its waiter a
        # slot. Invariant: a slot is free only while no live waiter is queued, since
        # a released slot goes straight to the first live waiter.
        self._queue: list[tuple[float, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    @property
    def running(self) -> int:
        """Heavy requests executing now (0 when there is no limit)."""
        return self.slots - self._free

    @property
    def waiting(self) -> int:
        """Heavy requests waiting for a slot."""
        return sum(1 for _, _, waiter in self._queue if not waiter.done())

    @asynccontextmanager
    async def slot(self, lane: Lane) -> AsyncIterator[None]:
        """Hold a slot for the ``async with`` block, waiting for one first.

        Raises:
            OverloadedError: no slot came free within ``max_wait_s`` (503).
        """
        if not self.slots:
            yield
            return
        await self._acquire(lane)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, lane: Lane) -> None:
        if self._free:
            self._free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._queue, (self._clock() + LEAD_S[lane], next(self._arrivals), waiter))
        try:
            async with asyncio.timeout(self.max_wait_s):
                await waiter
        except BaseException as e:
            if waiter.done() and not waiter.cancelled():
                # The slot was handed over as the wait ended: pass it on.
                self._release()
            else:
                waiter.cancel()  # left in the queue; _release skips it
            if isinstance(e, TimeoutError):
                raise OverloadedError(
                    "the server is busy: the request waited "
                    f"{self.max_wait_s:g} s for its turn; try again shortly",
                    headers={"Retry-After": "5"},
                ) from None
            raise

    def _release(self) -> None:
        while self._queue:
            _, _, waiter = heapq.heappop(self._queue)
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1
