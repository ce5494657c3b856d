"""The one error tree of the engine.

Every error the engine raises on purpose descends from :class:`HippoError`.
Only ``api/errors.py`` turns these into HTTP status codes.

::

    HippoError
    ├── ConfigError                 settings that cannot work together
    ├── InvalidInputError           a value the caller sent is not acceptable
    │   └── LimitExceededError      a size or count limit was exceeded
    ├── NotFoundError               no such memory (or not visible in this collection)
    ├── ConflictError               the write collides with existing state
    ├── StoreError                  the store failed
    │   ├── StoreUnavailableError   the store cannot be reached or written right now
    │   │   ├── StoreFullError      its disk is full: writes are refused, reads work
    │   │   └── StoreReadOnlyError  it may not be written: writes are refused, reads work
    │   ├── StoreAuthError          the store refused the server's credentials
    │   └── DataDirLockedError      another process owns the embedded data directory
    └── EmbeddingError              the embedder could not produce vectors
"""

from __future__ import annotations


class HippoError(Exception):
    """Base of every error the engine raises on purpose.

    Attributes:
        code: a short, stable, machine-readable identifier.
        field: the input field at fault, when there is one.
    """

    code = "hippo_error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class ConfigError(HippoError):
    code = "config_error"


class InvalidInputError(HippoError):
    code = "invalid_input"


class LimitExceededError(InvalidInputError):
    code = "limit_exceeded"


class NotFoundError(HippoError):
    code = "not_found"


class ConflictError(HippoError):
    code = "conflict"


class StoreError(HippoError):
    code = "store_error"


class StoreUnavailableError(StoreError):
    code = "store_unavailable"


class StoreFullError(StoreUnavailableError):
    code = "store_full"


class StoreReadOnlyError(StoreUnavailableError):
    code = "store_read_only"


class StoreAuthError(StoreError):
    """The store refused the credentials it was given (a wrong password, an
    unknown user): a fault of the server's configuration that no retry mends."""

    code = "store_auth_failed"


class DataDirLockedError(StoreError):
    code = "data_dir_locked"


class EmbeddingError(HippoError):
    code = "embedding_error"
