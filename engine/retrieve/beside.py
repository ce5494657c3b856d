"""Reads started on a pool beside the recall's own, taken when needed."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Generic, TypeVar

T = TypeVar("T")


class Beside(Generic[T]):
    """A read started on a pool while the recall goes on with another, whose
    answer the recall takes when it needs it. One that no worker has started by
    then is withdrawn and done by the recall itself, rather than waited for in
    the queue; without a pool, it is done then. Read once: the answer is kept."""

    def __init__(self, pool: Executor | None, call: Callable[[], T]) -> None:
        self._call: Callable[[], T] | None = call
        self._future = pool.submit(call) if pool is not None else None
        self._answer: T

    def result(self) -> T:
        if self._call is not None:
            if self._future is not None and not self._future.cancel():
                self._answer = self._future.result()
            else:
                self._answer = self._call()
            self._call = None
        return self._answer
