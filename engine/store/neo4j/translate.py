"""Driver errors in the engine's error tree.

The driver's managed transactions already retry what may succeed on a second try
(connection lost, leader switch, deadlock, database starting) with backoff, for
up to the configured retry time. What still fails reaches the caller as:

- :class:`~hippocampus.errors.StoreUnavailableError`: Neo4j cannot be reached or
  cannot serve right now (down, unreachable, a session lost, a transient error
  that outlasted the retries, the transaction memory limit). The API answers 503
  and the next call tries again: the store recovers on its own when Neo4j is back.
- :class:`~hippocampus.errors.StoreFullError`: Neo4j could not write its transaction
  log for want of disk space (``Neo.DatabaseError.Transaction.TransactionLogError``
  saying so, or any error naming "No space left on device"); writes fail until
  space is freed. Memory errors (``Neo.TransientError.General.OutOfMemoryError``,
  ``...MemoryPoolOutOfMemoryError``, ``...TransactionMemoryLimit``) are not
  disk: they stay unavailable.
- :class:`~hippocampus.errors.StoreAuthError`: Neo4j refused the credentials (a
  wrong password says so, rather than "retry later").
- :class:`~hippocampus.errors.ConflictError`: a uniqueness constraint refused a write.
- :class:`~hippocampus.errors.StoreError`: anything else (a statement Neo4j rejects).

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
    ResultFailedError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from hippocampus.errors import (
    ConflictError,
    StoreAuthError,
    StoreError,
    StoreFullError,
    StoreUnavailableError,
)

logger = logging.getLogger(__name__)

_UNAVAILABLE: tuple[type[Exception], ...] = (
    ServiceUnavailable,
    SessionExpired,
    ConnectionPoolError,
    TransientError,
)
_ENTITY_GONE = "Neo.ClientError.Statement.EntityNotFound"
_LOG_WRITE_FAILED = "Neo.DatabaseError.Transaction.TransactionLogError"
_DISK_FULL_WORDS = ("no space left on device", "disk is full", "disk full", "not enough space")


def translate(error: Exception, action: str) -> StoreError | ConflictError:
    """The engine error for a driver error raised while doing ``action``."""
    error = reported(error)
    detail = str(error) or type(error).__name__
    if isinstance(error, AuthError):
        return StoreAuthError(f"cannot {action}: Neo4j refused the credentials ({detail})")
    if _disk_full(error):
        return StoreFullError(f"cannot {action}: Neo4j's disk is full ({detail})")
    if isinstance(error, IncompleteCommit):
        return StoreUnavailableError(
            f"cannot {action}: the connection was lost while committing; the write "
            f"was applied whole or not at all ({detail})"
        )
    if lost_race(error):
        return StoreUnavailableError(
            f"cannot {action}: it collided with a concurrent write ({detail})"
        )
    if isinstance(error, _UNAVAILABLE):
        return StoreUnavailableError(f"cannot {action}: Neo4j is unavailable ({detail})")
    if isinstance(error, ConstraintError):
        return ConflictError(f"cannot {action}: {detail}")
    return StoreError(f"cannot {action}: {detail}")


def reported(error: Exception) -> Exception:
    """The server's error a driver error stands for, else ``error`` itself.

    When a statement fails at its start while the transaction still has results
    in flight, the driver's rollback can raise :class:`ResultFailedError` in place
    of the server's failure, which becomes its cause. Judged by that wrapper, a
    deadlock would be neither retried nor unavailable: it is judged by its cause.
    """
    cause = error.__cause__
    if isinstance(error, ResultFailedError) and isinstance(cause, Neo4jError):
        return cause
    return error


def worth_another_run(error: Exception) -> bool:
    """Whether a transaction that failed with ``error`` should run again: it lost
    a race (:func:`lost_race`), or a failure the driver retries (a deadlock)
    reached the caller hidden under a driver error (:func:`reported`); either
    judged by the server's error beneath such a driver error."""
    server = reported(error)
    if server is not error and isinstance(server, Neo4jError) and server.is_retryable():
        return True
    return lost_race(server)


def lost_race(error: Exception) -> bool:
    """Whether ``error`` is a write colliding with a concurrent one in a way the
    driver does not retry but a second run mends: an entity deleted under the
    statement (a hub pruned by another transaction after this one's MERGE found
    it), or a node deletion refused because another transaction linked to it."""
    if not isinstance(error, Neo4jError):
        return False
    if error.code == _ENTITY_GONE:
        return True
    return isinstance(error, ConstraintError) and "still has relationships" in str(error)


def _disk_full(error: Exception) -> bool:
    """Whether ``error`` says Neo4j ran out of disk space: its transaction log
    could not be written for want of space, or the message names it."""
    text = str(error).casefold()
    if any(words in text for words in _DISK_FULL_WORDS):
        return True
    # The transaction log could not be written: a full disk is what this code
    # reports in practice (an I/O fault is the other cause, and refuses writes
    # alike); the server log keeps Neo4j's detail either way.
    return isinstance(error, Neo4jError) and error.code == _LOG_WRITE_FAILED


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
