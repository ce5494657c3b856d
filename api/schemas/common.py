"""What every request and response shares: the size limits, the strict base of
requests, and the error body."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from hippocampus.config import Limits
from hippocampus.model.memory import MAX_SPEAKER_CHARS

LIMITS = Limits()

Content = Annotated[str, Field(min_length=1, max_length=LIMITS.max_content_chars)]
Name = Annotated[str, Field(min_length=1, max_length=LIMITS.max_tag_chars)]
Names = Annotated[list[Name], Field(max_length=LIMITS.max_tags)]
MemoryId = Annotated[str, Field(min_length=1, max_length=200)]
Category = Annotated[str, Field(min_length=1, max_length=40, examples=["bug_fix"])]
Importance = Annotated[float, Field(ge=0.0, le=1.0)]
Source = Annotated[str, Field(max_length=LIMITS.max_source_chars)]
Speaker = Annotated[str, Field(min_length=1, max_length=MAX_SPEAKER_CHARS, examples=["user"])]
OccurredAt = Annotated[
    AwareDatetime,
    Field(
        description="When the remembered thing happened (ISO 8601 with a UTC offset, "
        "e.g. 2024-05-01T14:03:00Z); default: when it is remembered.",
        examples=["2024-05-01T14:03:00Z"],
    ),
]


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# -- errors --------------------------------------------------------------------


class ErrorDetail(BaseModel):
    code: str = Field(examples=["invalid_input"])
    message: str
    field: str | None = Field(default=None, examples=["memories.3.content"])


class ErrorOut(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No valid API key"},
    403: {"model": ErrorOut, "description": "No keys configured and the client is not local"},
    404: {"model": ErrorOut, "description": "Not found, or not visible to this key"},
    422: {"model": ErrorOut, "description": "Invalid input; `field` names it"},
    503: {
        "model": ErrorOut,
        "description": "The store (or, for writes that need it, the embedder) is unavailable "
        "right now, or full, or read-only; nothing was written. Try again shortly.",
    },
}
