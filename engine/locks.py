"""In-process locks keyed by name, for read-modify-write sequences above the store."""

from __future__ import annotations

import threading
import zlib


class StripedLock:
    """A fixed set of locks; a key always maps to the same one.

    Serializes changes to the same thing (one memory) without a lock per thing
    kept forever: two keys may share a lock, which only costs some waiting.
    Never hold two of its locks at once (two keys may be one lock).

    Args:
        stripes: how many locks.
    """

    def __init__(self, stripes: int = 64) -> None:
        self._locks = tuple(threading.Lock() for _ in range(stripes))

    def __call__(self, *key: str) -> threading.Lock:
        """The lock of ``key`` (its parts, e.g. collection and memory id)."""
        digest = zlib.crc32("\x00".join(key).encode("utf-8"))
        return self._locks[digest % len(self._locks)]
