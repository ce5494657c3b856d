"""Driver errors in the engine's error tree.

The driver's managed transactions already retry what may succeed on a second try
(connection lost, leader switch, deadlock, database starting) with backoff, for
up to the configured retry time. What still fails reaches the caller as:

- :class:`~engine.errors.StoreUnavailableError`: Neo4j cannot be reached or
  cannot serve right now (down, unreachable, a session lost, a transient error
  that outlasted the retries, credentials refused). The API answers 503 and the
  next call tries again: the store recovers on its own when Neo4j is back.
- :class:`~engine.errors.ConflictError`: a uniqueness constraint refused a write.
- :class:`~engine.errors.StoreError`: anything else (a statement Neo4j rejects).

Every write is one transaction, so none of these leaves a write half applied.
The driver's message stays on the exception (and in the log), never in an API
answer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from neo4j.exceptions import (
    AuthError,
    ConnectionPoolError,
    ConstraintError,
    DriverError,
    IncompleteCommit,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from engine.errors import ConflictError, StoreError, StoreUnavailableError

logger = logging.getLogger(__name__)

_UNAVAILABLE: tuple[type[Exception], ...] = (
    ServiceUnavailable,
    SessionExpired,
    ConnectionPoolError,
    TransientError,
    AuthError,
)


def translate(error: Exception, action: str) -> StoreError | ConflictError:
    """The engine error for a driver error raised while doing ``action``."""
    detail = str(error) or type(error).__name__
    if isinstance(error, IncompleteCommit):
        return StoreUnavailableError(
            f"cannot {action}: the connection was lost while committing; the write "
            f"was applied whole or not at all ({detail})"
        )
    if isinstance(error, _UNAVAILABLE):
        return StoreUnavailableError(f"cannot {action}: Neo4j is unavailable ({detail})")
    if isinstance(error, ConstraintError):
        return ConflictError(f"cannot {action}: {detail}")
    return StoreError(f"cannot {action}: {detail}")


@contextmanager
def translated(action: str) -> Iterator[None]:
    """Turn driver errors raised in the block into engine errors."""
    try:
        yield
    except (Neo4jError, DriverError) as e:
        raise translate(e, action) from e
    except OSError as e:
        # The driver wraps socket errors; one that escapes it means the same.
        raise StoreUnavailableError(f"cannot {action}: Neo4j is unreachable ({e})") from e
