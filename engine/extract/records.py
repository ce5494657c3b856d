"""A record as a natural-language document, built the same way every time.

::

    Work Item: Customer says app is slow on mobile

    Description:
    Customer reported that the mobile app takes 5+ seconds to load ...

    Category:
    Bug Reports

    Status:
    IN_PROGRESS

    Priority:
    HIGH

    Custom Fields:
    - Platform: iOS
    - Severity: Critical

The title and status are always there; description, category, priority and
custom fields only when they have a value. Custom fields come sorted by name,
and only the meaningful ones: text and enum-like values. Numbers, ids,
timestamps, people assignments, logs and JSON blobs are left out. Every value
is sanitized (see :mod:`hippocampus.extract.sanitize`); the single-line ones have
their whitespace collapsed.

Status and priority are in the document but do not decide whether it is
re-indexed: :func:`indexed_text` is the document without them, and a record is
re-embedded only when that changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hippocampus.errors import InvalidInputError, LimitExceededError
from hippocampus.extract.sanitize import has_control_characters, sanitize_text, single_line
from hippocampus.model.resource import CustomValue, Resource

TITLE_PREFIX = "Work Item: "
_STATUS_BLOCK = "\n\nStatus:\n"
_PRIORITY_BLOCK = "\n\nPriority:\n"
_NUMERIC = re.compile(r"^[\s+\-~≈$€£]*\d[\d\s.,_]*(?:%|[kKmMbB])?\s*$")
_TIMESTAMP = re.compile(
    r"^\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?\s*(?:Z|[+-]\d{2}:?\d{2})?\s*$"
)
_KEY_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_ID_WORDS = frozenset({"id", "ids", "uuid", "guid", "ref", "sku"})
_TIME_WORDS = frozenset(
    {"at", "date", "time", "timestamp", "created", "updated", "modified", "deadline", "due"}
)
_PEOPLE_WORDS = frozenset(
    {"assignee", "assignees", "assigned", "owner", "owners", "reporter", "author", "by", "watchers"}
)
_LOG_WORDS = frozenset({"log", "logs", "audit", "history", "changelog", "activity", "trail"})
_EXCLUDED_KEY_WORDS = _ID_WORDS | _TIME_WORDS | _PEOPLE_WORDS | _LOG_WORDS


@dataclass(frozen=True)
class RecordLimits:
    """Size limits of a record."""

    max_title_chars: int = 500
    max_document_chars: int = 8_000
    max_custom_fields: int = 50
    max_field_name_chars: int = 100
    max_field_value_chars: int = 1_000


@dataclass(frozen=True)
class RecordDocument:
    """A built document, what sanitizing changed, and the custom fields left out."""

    text: str
    changes: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def build_document(resource: Resource, limits: RecordLimits | None = None) -> RecordDocument:
    """The record's document: same record, same bytes.

    Raises:
        InvalidInputError: an empty title or status, a custom field name with
            control characters (``field`` names it).
        LimitExceededError: a value or the whole document is too long.
    """
    limits = limits or RecordLimits()
    changes: list[str] = []
    title = _line(resource.title, "title", limits.max_title_chars, changes)
    status = _line(resource.status, "status", limits.max_title_chars, changes)
    if not title:
        raise InvalidInputError("title is empty", field="title")
    if not status:
        raise InvalidInputError("status is empty", field="status")
    blocks = [f"{TITLE_PREFIX}{title}"]
    if resource.description is not None:
        cleaned = sanitize_text(resource.description)
        changes.extend(f"description: {c}" for c in cleaned.changes)
        description = _paragraphs(cleaned.text)
        if description:
            blocks.append(f"Description:\n{description}")
    if resource.category is not None:
        category = _line(resource.category, "category", limits.max_title_chars, changes)
        if category:
            blocks.append(f"Category:\n{category}")
    blocks.append(f"Status:\n{status}")
    if resource.priority is not None:
        priority = _line(resource.priority, "priority", limits.max_title_chars, changes)
        if priority:
            blocks.append(f"Priority:\n{priority}")
    fields, left_out = _custom_fields(resource.custom_fields, limits, changes)
    if fields:
        blocks.append("Custom Fields:\n" + "\n".join(f"- {k}: {v}" for k, v in fields))
    text = "\n\n".join(blocks)
    if len(text) > limits.max_document_chars:
        raise LimitExceededError(
            f"the record's document has {len(text)} characters; the limit is "
            f"{limits.max_document_chars}",
            field="description",
        )
    return RecordDocument(text=text, changes=changes, left_out=left_out)


def indexed_text(document: str) -> str:
    """The part of a document whose change calls for re-indexing: all of it but the
    status and priority. A text not built by :func:`build_document` is all indexed.

    Everything after the status block (priority, custom fields) is single-line
    by construction, so the last status block is the document's own even when a
    description quotes one.
    """
    at = document.rfind(_STATUS_BLOCK)
    if at < 0 or not document.startswith(TITLE_PREFIX):
        return document
    head, rest = document[:at], document[at + len(_STATUS_BLOCK) :]
    _, _, tail = rest.partition("\n\n")  # drops the status line
    if tail.startswith(_PRIORITY_BLOCK[2:]):
        _, _, tail = tail[len(_PRIORITY_BLOCK) - 2 :].partition("\n\n")
    return f"{head}\n\n{tail}" if tail else head


def document_title(document: str) -> str | None:
    """The title of a record document; ``None`` for other text."""
    if not document.startswith(TITLE_PREFIX):
        return None
    return document[len(TITLE_PREFIX) :].split("\n", 1)[0]


def meaningful_value(name: str, value: CustomValue) -> str | None:
    """A custom field's value as the document shows it, or ``None`` when the field
    is not indexed: empty, numeric-only, a timestamp, a JSON blob, or named like
    an id, a date, a person assignment or a log."""
    if _excluded_name(name) or value is None or isinstance(value, dict):
        return None
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, int | float):
        return None
    if isinstance(value, list):
        items = sorted(
            {text for v in value if (text := _text_value(v)) is not None}, key=str.casefold
        )
        return ", ".join(items) or None
    return _text_value(value)


def _text_value(value: object) -> str | None:
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if not isinstance(value, str):
        return None
    text = single_line(value)
    if not text or _NUMERIC.match(text) or _TIMESTAMP.match(text) or _json_blob(text):
        return None
    return text


def _json_blob(text: str) -> bool:
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _excluded_name(name: str) -> bool:
    words = {w.casefold() for w in _KEY_WORDS.findall(name)}
    return bool(words & _EXCLUDED_KEY_WORDS)


def _custom_fields(
    values: dict[str, CustomValue], limits: RecordLimits, changes: list[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    if len(values) > limits.max_custom_fields:
        raise LimitExceededError(
            f"{len(values)} custom fields; the limit is {limits.max_custom_fields}",
            field="custom_fields",
        )
    kept: list[tuple[str, str]] = []
    left_out: list[str] = []
    for raw_name, value in values.items():
        where = f"custom_fields.{raw_name}"
        if has_control_characters(raw_name):
            raise InvalidInputError(
                "custom field names may not hold control characters", field="custom_fields"
            )
        name = " ".join(raw_name.split())
        if not name or len(name) > limits.max_field_name_chars:
            raise InvalidInputError(
                f"custom field names are 1-{limits.max_field_name_chars} characters",
                field="custom_fields",
            )
        for text in _texts(value):
            if len(text) > limits.max_field_value_chars:
                raise LimitExceededError(
                    f"a custom field value has {len(text)} characters; the limit is "
                    f"{limits.max_field_value_chars}",
                    field=where,
                )
            changes.extend(f"{where}: {c}" for c in sanitize_text(text).changes)
        shown = meaningful_value(name, value)
        if shown is None:
            left_out.append(name)
        else:
            kept.append((name, shown))
    kept.sort(key=lambda kv: (kv[0].casefold(), kv[0], kv[1]))
    return kept, sorted(left_out, key=lambda n: (n.casefold(), n))


def _texts(value: CustomValue) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        yield from (v for v in value if isinstance(v, str))
    # An object is left out of the document whatever its size: nothing to cap.


def _line(value: str, where: str, limit: int, changes: list[str]) -> str:
    if len(value) > limit:
        raise LimitExceededError(
            f"{where} has {len(value)} characters; the limit is {limit}", field=where
        )
    changes.extend(f"{where}: {c}" for c in sanitize_text(value).changes)
    return single_line(value)


def _paragraphs(text: str) -> str:
    """Trailing spaces off every line, runs of blank lines down to one."""
    lines = [line.rstrip() for line in text.split("\n")]
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    return out.strip()


__all__ = [
    "TITLE_PREFIX",
    "RecordDocument",
    "RecordLimits",
    "build_document",
    "document_title",
    "indexed_text",
    "meaningful_value",
]
