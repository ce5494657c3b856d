"""The one place errors become HTTP status codes.

Every error response has the same body::

    {"error": {"code": "...", "message": "...", "field": "..."}}

``field`` is present only when the input at fault is known. Store and embedder
failures are logged with their detail and answered with a generic message: the
detail may name files, hosts or internals that clients have no business seeing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hippocampus.errors import (
    ConfigError,
    ConflictError,
    DataDirLockedError,
    EmbeddingError,
    HippoError,
    InvalidInputError,
    NotFoundError,
    StoreAuthError,
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    StoreUnavailableError,
)

logger = logging.getLogger(__name__)

NOT_FOUND_MESSAGE = "not found (or not visible to this API key)"
"""One message for every 404 about memories and collections, so a key bound to
another collection gets the very same answer as a request for something absent."""

_INTERNAL_MESSAGE = "internal error; the server log has the details"
_STORE_AUTH_MESSAGE = (
    "the store refused this server's credentials: the server's configuration must be "
    "fixed (its log says which store); retrying will not help"
)
# The most specific first: the first class an error is an instance of gives its message.
_UNAVAILABLE_MESSAGES: dict[type[HippoError], str] = {
    StoreAuthError: _STORE_AUTH_MESSAGE,
    StoreFullError: (
        "the store's disk is full: writes are refused until space is freed; reads still work"
    ),
    StoreReadOnlyError: (
        "the store is read-only: writes are refused until it is writable again; reads still work"
    ),
    StoreUnavailableError: "the store is unavailable right now; try again shortly",
    DataDirLockedError: "the store is unavailable right now; try again shortly",
    EmbeddingError: "the embedder is unavailable right now; try again shortly",
}
_MAX_LISTED_ERRORS = 5
_INDEX = re.compile(r"\[(\d+)\]")
_LOC_ROOTS = frozenset({"body", "query", "path", "header", "cookie"})


class ApiError(Exception):
    """An error of the HTTP layer itself (authentication, access), not of the engine.

    Attributes:
        status_code: the HTTP status to answer with.
        code: a short, stable, machine-readable identifier.
        message: what the client is told.
        headers: extra response headers.
    """

    status_code = 400
    code = "bad_request"

    def __init__(self, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = dict(headers or {})


class UnauthorizedError(ApiError):
    """No API key, or one that is not configured."""

    status_code = 401
    code = "unauthorized"

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class LoopbackOnlyError(ApiError):
    """No API keys are configured and the client is not on this machine."""

    status_code = 403
    code = "loopback_only"


class AmbiguousCollectionError(ApiError):
    """A route that works on the key's one collection, called with a key bound to
    several (or to all, or with no keys configured)."""

    status_code = 403
    code = "collection_ambiguous"


class OverloadedError(ApiError):
    """A heavy request waited too long for its turn (see :mod:`api.admission`)."""

    status_code = 503
    code = "overloaded"


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The JSON body of every error response.

    Args:
        code: machine-readable identifier.
        message: human-readable explanation, safe to show to the client.
        field: the input at fault, dotted (``memories.3.content``), when known.
    """
    error: dict[str, Any] = {"code": code, "message": message}
    if field:
        error["field"] = field
    return {"error": error}


def error_response(
    status_code: int,
    code: str,
    message: str,
    field: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A JSON error response in the shape of :func:`error_body`."""
    return JSONResponse(
        error_body(code, message, field), status_code=status_code, headers=dict(headers or {})
    )


def status_for(exc: HippoError) -> int:
    """The HTTP status an engine error is answered with."""
    if isinstance(exc, InvalidInputError):  # LimitExceededError included
        return 422
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, StoreUnavailableError | DataDirLockedError | EmbeddingError):
        return 503
    # StoreError (StoreAuthError included: a configuration fault, not a passing
    # one, so no 503 that says to come back), ConfigError, any future HippoError.
    return 500


def hippo_error_response(exc: HippoError) -> JSONResponse:
    """Turn an engine error into a response, logging what the client is not told."""
    status = status_for(exc)
    if status == 404:
        return error_response(404, NotFoundError.code, NOT_FOUND_MESSAGE)
    if status in (409, 422):
        return error_response(status, exc.code, exc.message, dotted_field(exc.field))
    if status == 503:
        logger.warning("service unavailable: %s: %s", type(exc).__name__, exc.message)
        return error_response(
            503, exc.code, _message_for_unavailable(exc), headers={"Retry-After": "5"}
        )
    logger.error("engine error: %s: %s", type(exc).__name__, exc.message, exc_info=exc)
    code = exc.code if isinstance(exc, StoreError | ConfigError) else "internal_error"
    message = _STORE_AUTH_MESSAGE if isinstance(exc, StoreAuthError) else _INTERNAL_MESSAGE
    return error_response(500, code, message)


def not_ready_response(exc: Exception, state: Mapping[str, Any]) -> JSONResponse:
    """The 503 of ``/readyz``: the probe's ``state`` plus the error, detail logged only.

    Args:
        exc: why the store cannot serve.
        state: what the probe reports besides the error (``ready``, ``store`` ...).
    """
    if isinstance(exc, HippoError):
        code, message = exc.code, _message_for_unavailable(exc)
        logger.warning("not ready: %s: %s", type(exc).__name__, exc.message)
    else:
        code, message = "store_unavailable", _UNAVAILABLE_MESSAGES[StoreUnavailableError]
        logger.warning("not ready: unexpected error from the store check", exc_info=exc)
    return JSONResponse({**state, **error_body(code, message)}, status_code=503)


def _message_for_unavailable(exc: HippoError) -> str:
    for kind, message in _UNAVAILABLE_MESSAGES.items():
        if isinstance(exc, kind):
            return message
    # Any other store failure: the store cannot serve, whatever the cause.
    return _UNAVAILABLE_MESSAGES[StoreUnavailableError]


def dotted_field(field: str | None) -> str | None:
    """The engine's ``memories[3].content`` in the API's dotted form ``memories.3.content``."""
    if field is None:
        return None
    return _INDEX.sub(r".\1", field)


def _loc_text(loc: Sequence[str | int]) -> str:
    return ".".join(str(part) for part in loc)


def _field_of(loc: Sequence[str | int]) -> str | None:
    # ("body", "memories", 3, "content") -> "memories.3.content"; the root says where the
    # value came from, which the field name alone makes clear enough.
    parts = list(loc[1:]) if loc and loc[0] in _LOC_ROOTS else list(loc)
    return _loc_text(parts) or None


def validation_error_response(errors: Sequence[Any]) -> JSONResponse:
    """A 422 naming the first field at fault and listing the first few problems.

    Args:
        errors: FastAPI/pydantic error dicts (``type``, ``loc``, ``msg``).
    """
    if not errors:
        return error_response(422, "validation_error", "the request is not valid")
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "malformed JSON")
        return error_response(422, "validation_error", f"the body is not valid JSON: {reason}")
    lines = [f"{_loc_text(e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in errors]
    message = "; ".join(lines[:_MAX_LISTED_ERRORS])
    if len(lines) > _MAX_LISTED_ERRORS:
        message += f" (and {len(lines) - _MAX_LISTED_ERRORS} more)"
    return error_response(422, "validation_error", message, _field_of(first.get("loc", ())))


# -- handlers ------------------------------------------------------------------


async def _on_hippo_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HippoError)
    return hippo_error_response(exc)


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status_code, exc.code, exc.message, headers=exc.headers)


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media and "json" not in media and any(e.get("loc", ())[:1] == ("body",) for e in errors):
        # A form or text body reads as "not an object", which does not say why.
        return error_response(
            415,
            "unsupported_media_type",
            f"the body must be JSON (Content-Type: application/json), not {media}",
        )
    return validation_error_response(errors)


async def _on_http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and isinstance(exc.__cause__, ValueError | RecursionError):
        # FastAPI's 400 for a body its JSON parser gave up on (nested too deeply, an
        # integer too long to convert): malformed JSON, answered as the parser's
        # other complaints are.
        return error_response(422, "validation_error", "the body could not be parsed as JSON")
    codes = {404: "not_found", 405: "method_not_allowed"}
    code = codes.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    if exc.status_code == 404:
        message = "no such route"
    return error_response(exc.status_code, code, message, headers=exc.headers)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Starlette re-raises after this response is sent, so the server logs the
    # traceback too; this line ties it to the request.
    logger.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", _INTERNAL_MESSAGE)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that give every error the one JSON shape."""
    app.add_exception_handler(HippoError, _on_hippo_error)
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(Exception, _on_unexpected)


# -- body size -----------------------------------------------------------------

_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class BodySizeLimitMiddleware:
    """Answer 413 to request bodies over ``max_bytes`` before anything parses them.

    A declared ``Content-Length`` is checked up front. A body without one (chunked)
    is read here up to the limit and replayed to the app; the app would hold it
    in memory to parse the JSON anyway, so this costs nothing extra.

    Args:
        app: the ASGI app to protect.
        max_bytes: the largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _send_error(send, 400, "bad_request", "Content-Length is not a number")
                return
            if size > self.max_bytes:
                await self._too_large(send)
                return
            await self.app(scope, receive, send)
            return

        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # The client went away before finishing the body; nothing to answer.
                return
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        await _send_error(
            send,
            413,
            "body_too_large",
            f"the request body is larger than the limit of {self.max_bytes} bytes",
        )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _send_error(send: Send, status: int, code: str, message: str) -> None:
    response = error_response(status, code, message, headers={"Connection": "close"})
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": response.raw_headers,
        }
    )
    await send({"type": "http.response.body", "body": response.body})
