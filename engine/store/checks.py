"""Checks and conversions every store applies alike, defined once: a store's
arguments validated the same way whichever backend holds them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import numpy as np

from hippocampus.errors import InvalidInputError
from hippocampus.model import Memory
from hippocampus.store.records import Learned, Vector

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc(moment: datetime) -> datetime:
    """``moment`` with a timezone; naive datetimes are taken as UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def micros(moment: datetime) -> int:
    """Microseconds since the epoch (a naive datetime is taken as UTC): how both
    stores keep the times they index and compare."""
    return (utc(moment) - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime:
    """The UTC datetime of :func:`micros`."""
    return _EPOCH + timedelta(microseconds=value)


def check_collection(collection: str, memory: Memory) -> None:
    """Refuse a memory written to a collection other than its own."""
    if memory.collection != collection:
        raise InvalidInputError(
            f"memory {memory.id!r} belongs to {memory.collection!r}, not {collection!r}",
            field="collection",
        )


def check_vector(value: Vector, owner: str) -> Vector:
    """``value`` as a float32 vector, refused unless one-dimensional, not empty and finite."""
    vector = np.ascontiguousarray(value, dtype=np.float32)
    if vector.ndim != 1 or vector.shape[0] == 0:
        raise InvalidInputError(
            f"the vector of {owner!r} must be one-dimensional and not empty", field="vector"
        )
    if not np.isfinite(vector).all():
        raise InvalidInputError(f"the vector of {owner!r} is not finite", field="vector")
    return vector


def check_passages(value: Vector | None, vector: Vector | None, memory_id: str) -> Vector | None:
    """Passage vectors as stored: a finite 2-D float32 array of ``vector``'s
    dimension, which they need; ``None`` when there are none."""
    if value is None:
        return None
    if vector is None:
        raise InvalidInputError(
            f"memory {memory_id!r} has passage vectors but no vector", field="passages"
        )
    rows = np.ascontiguousarray(value, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[1] != vector.shape[0]:
        raise InvalidInputError(
            f"the passage vectors of {memory_id!r} must be rows of the vector's dimension",
            field="passages",
        )
    if not np.isfinite(rows).all():
        raise InvalidInputError(
            f"the passage vectors of {memory_id!r} are not finite", field="passages"
        )
    return rows if rows.shape[0] else None


def check_learned(collection: str, read: Mapping[str, Memory], learned: Learned) -> None:
    """What a :data:`LearnChange` returned, checked alike by every store against
    the memories it was given.

    Raises:
        InvalidInputError: see :meth:`GraphStore.learn`.
    """
    for memory in learned.memories:
        was = read.get(memory.id)
        if was is None or memory.collection != collection:
            raise InvalidInputError(
                f"memory {memory.id!r} was not read for this update", field="memory_ids"
            )
        if (memory.content_hash, memory.content) != (was.content_hash, was.content):
            raise InvalidInputError(
                f"memory {memory.id!r}: a learning update cannot change its content",
                field="memories",
            )


def check_decay_pass(period: str, step: float, floor: float) -> None:
    """The arguments of :meth:`GraphStore.decay_edges`, checked alike by every store.

    Raises:
        InvalidInputError: an empty period, a negative step, or a floor outside
            [0, 1].
    """
    if not period:
        raise InvalidInputError("a decay pass needs a period", field="period")
    if step < 0.0:
        raise InvalidInputError("the decay step must not be negative", field="step")
    if not 0.0 <= floor <= 1.0:
        raise InvalidInputError("the decay floor must lie in [0, 1]", field="floor")


def check_lease(name: str, holder: str, ttl_s: float) -> None:
    """The arguments of :meth:`GraphStore.take_lease`, checked alike by every store.

    Raises:
        InvalidInputError: an empty name or holder, or a negative term.
    """
    if not name:
        raise InvalidInputError("a lease needs a name", field="name")
    if not holder:
        raise InvalidInputError("a lease needs a holder", field="holder")
    if not ttl_s >= 0.0:
        raise InvalidInputError("a lease's term must not be negative", field="ttl_s")
