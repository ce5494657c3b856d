"""Bodies of ``/resources`` and the RAG search over them."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from hippocampus.api.schemas.common import LIMITS, RequestModel
from hippocampus.model.resource import Resource
from hippocampus.service import ResourceOutcome


def _custom_value(value: Any) -> Any:
    """A custom field's value: text, a number, yes/no, a list of those, an object, or
    null; text at most ``max_custom_field_chars`` long. One clear error, not one per
    union member."""
    limit = LIMITS.max_custom_field_chars

    def scalar(v: Any) -> bool:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("numbers must be finite")
        if isinstance(v, str) and len(v) > limit:
            raise ValueError(f"text is at most {limit} characters")
        return v is None or isinstance(v, str | int | float | bool)

    if isinstance(value, list):
        if len(value) > LIMITS.max_tags:
            raise ValueError(f"a list holds at most {LIMITS.max_tags} values")
        if not all(scalar(v) and v is not None for v in value):
            raise ValueError("a list holds text, numbers or yes/no values")
        return value
    if isinstance(value, dict) or scalar(value):
        return value
    raise ValueError("a custom field is text, a number, yes/no, a list, an object or null")


CustomFieldValue = Annotated[Any, BeforeValidator(_custom_value)]


class ResourceIn(RequestModel):
    """A record to index. Title and status always; the rest when the record has it."""

    title: Annotated[str, Field(min_length=1, max_length=LIMITS.max_title_chars)]
    status: Annotated[str, Field(min_length=1, max_length=LIMITS.max_title_chars)] = Field(
        examples=["IN_PROGRESS"], description="ARCHIVED removes the record from the index."
    )
    description: Annotated[str, Field(max_length=LIMITS.max_content_chars)] | None = None
    category: Annotated[str, Field(max_length=LIMITS.max_title_chars)] | None = Field(
        default=None, examples=["Bug Reports"]
    )
    priority: Annotated[str, Field(max_length=LIMITS.max_title_chars)] | None = Field(
        default=None, examples=["HIGH"]
    )
    custom_fields: Annotated[
        dict[
            Annotated[str, Field(min_length=1, max_length=LIMITS.max_tag_chars)], CustomFieldValue
        ],
        Field(max_length=LIMITS.max_custom_fields),
    ] = Field(
        default_factory=dict,
        description=(
            "Indexed when text or enum-like (a Yes/No, a list of labels); numbers, ids, "
            "dates, assignees, logs and JSON blobs are left out of the document."
        ),
        examples=[{"Severity": "Critical", "Platform": "iOS", "Story points": 5}],
    )

    def to_engine(self) -> Resource:
        return Resource.model_validate(self.model_dump())


class ResourceOut(BaseModel):
    id: str
    action: Literal["created", "updated", "unchanged", "deleted", "absent"] = Field(
        description=(
            "created / updated: (re-)indexed; unchanged: nothing to re-index (a status- or "
            "priority-only change included); deleted: archived and removed; absent: "
            "archived and not indexed anyway."
        )
    )
    reindexed: bool = Field(description="Whether the record was indexed by this request.")
    embedded: bool | None = Field(
        description="Whether the document has a vector (false: stored without one, to be "
        "re-embedded when the embedder is back); null once deleted."
    )
    document: str | None = Field(description="The indexed document; null once deleted.")
    reasons: list[str]

    @classmethod
    def from_engine(cls, outcome: ResourceOutcome) -> ResourceOut:
        action = outcome.action
        assert action in ("created", "updated", "unchanged", "deleted", "absent")
        return cls(
            id=outcome.resource_id,
            action=action,
            reindexed=outcome.reindexed,
            embedded=outcome.embedded,
            document=outcome.memory.content if outcome.memory is not None else None,
            reasons=list(outcome.reasons),
        )


class RagSearchIn(RequestModel):
    query: Annotated[str, Field(min_length=1, max_length=LIMITS.max_query_chars)] = Field(
        examples=["Have we seen similar performance issues before?"]
    )
    limit: Annotated[int, Field(ge=1, le=LIMITS.max_recall_limit)] = 5
    collection: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        default=None,
        description=(
            "The collection to search. Not needed with a key bound to exactly one "
            "collection; needed with no keys configured (a local server) or a key bound "
            "to several."
        ),
        examples=["org:acme"],
    )


class RagSearchOut(BaseModel):
    success: bool = True
    work_item_ids: list[int | str] = Field(
        description=(
            "Ids of the most similar records, best first: the number of a "
            "'workItem:<number>' resource id, other resource ids as they are."
        ),
        examples=[[123, 456, 789]],
    )

    @classmethod
    def from_ids(cls, resource_ids: list[str]) -> RagSearchOut:
        return cls(work_item_ids=[work_item_id(i) for i in resource_ids])


def work_item_id(resource_id: str) -> int | str:
    """``workItem:123`` → ``123``; other ids as they are."""
    prefix, sep, rest = resource_id.partition(":")
    if sep and prefix == "workItem" and rest.isascii() and rest.isdigit():
        return int(rest)
    return resource_id
