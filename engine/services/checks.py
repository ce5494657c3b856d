"""Validation of what callers give the engine: collections, ids, new memories."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hippocampus.config import COLLECTION_PATTERN, Limits
from hippocampus.errors import InvalidInputError, LimitExceededError
from hippocampus.extract.sanitize import has_control_characters, sanitize_text
from hippocampus.model import NewMemory, content_hash
from hippocampus.model.memory import MAX_SPEAKER_CHARS
from hippocampus.services.context import Context

# \Z, not $: $ also matches before a final newline.
_ID_PATTERN = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}\Z")
_CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_\-]{0,39}\Z")


@dataclass(frozen=True)
class Prepared:
    """A validated, sanitized item and what sanitizing changed."""

    item: NewMemory
    changes: list[str]
    digest: str


class Checks:
    """The checks every service makes of its input, against the shared limits
    (read at each check: limits set on the engine apply at once)."""

    def __init__(self, context: Context) -> None:
        self._context = context

    @property
    def limits(self) -> Limits:
        return self._context.limits

    def check_collection(self, collection: str) -> str:
        if not COLLECTION_PATTERN.match(collection):
            raise InvalidInputError(
                "collection names are 1-128 characters: letters, digits and _ . : @ -, "
                "starting with a letter or digit",
                field="collection",
            )
        return collection

    def check_id(self, value: str, where: str = "id") -> str:
        """An id as given by a caller (memory, resource, conversation).

        Raises:
            InvalidInputError: empty, too long, or holding control characters
                (including zero-width and bidirectional ones) or slashes.
        """
        if (
            not _ID_PATTERN.match(value)
            or len(value) > self.limits.max_id_chars
            or has_control_characters(value)
        ):
            raise InvalidInputError(
                f"ids are 1-{self.limits.max_id_chars} characters with no control "
                "characters or slashes",
                field=where,
            )
        return value

    def check_new(self, item: NewMemory, where: str) -> NewMemory:
        content = item.content.strip()
        if not content:
            raise InvalidInputError("content is empty", field=f"{where}content")
        if len(content) > self.limits.max_content_chars:
            raise LimitExceededError(
                f"content has {len(content)} characters; the limit is "
                f"{self.limits.max_content_chars}",
                field=f"{where}content",
            )
        if item.id is not None:
            self.check_id(item.id, f"{where}id")
        if item.conversation_id is not None:
            self.check_id(item.conversation_id, f"{where}conversation_id")
        if len(item.synthesized_from) > self.limits.max_tags:
            raise LimitExceededError(
                f"at most {self.limits.max_tags} memories in synthesized_from",
                field=f"{where}synthesized_from",
            )
        for source_id in item.synthesized_from:
            self.check_id(source_id, f"{where}synthesized_from")
        source = self.check_source(item.source, f"{where}source")
        speaker = self.check_speaker(item.speaker, f"{where}speaker")
        category = item.category.strip().lower()
        if not _CATEGORY_PATTERN.match(category):
            raise InvalidInputError(
                "category is 1-40 characters: lower-case letters, digits, _ and -",
                field=f"{where}category",
            )
        tags = self.check_names(item.tags, f"{where}tags")
        for name in ("domains", "triggers", "concepts"):
            given = getattr(item, name)
            if given is not None:
                self.check_names(given, f"{where}{name}")
        return item.model_copy(
            update={
                "content": content,
                "category": category,
                "tags": tags,
                "source": source,
                "speaker": speaker,
            }
        )

    def check_speaker(self, speaker: str | None, where: str) -> str | None:
        """A speaker label as given: trimmed, 1-100 characters, no control characters."""
        if speaker is None:
            return None
        name = speaker.strip()
        if not name or len(name) > MAX_SPEAKER_CHARS or has_control_characters(name):
            raise InvalidInputError(
                f"speaker is 1-{MAX_SPEAKER_CHARS} characters with no control characters",
                field=where,
            )
        return name

    def check_source(self, source: str | None, where: str) -> str | None:
        if source is None:
            return None
        name = source.strip()
        if not name or len(name) > self.limits.max_source_chars or has_control_characters(name):
            raise InvalidInputError(
                f"source is 1-{self.limits.max_source_chars} characters with no control characters",
                field=where,
            )
        return name

    def check_names(self, values: Sequence[str], where: str) -> list[str]:
        if len(values) > self.limits.max_tags:
            raise LimitExceededError(f"at most {self.limits.max_tags} values", field=where)
        out: list[str] = []
        for value in values:
            name = value.strip()
            if not name or len(name) > self.limits.max_tag_chars:
                raise InvalidInputError(
                    f"each value is 1-{self.limits.max_tag_chars} characters", field=where
                )
            if has_control_characters(name):
                raise InvalidInputError(
                    "values may not hold control characters (zero-width and bidirectional "
                    "ones included)",
                    field=where,
                )
            if name not in out:
                out.append(name)
        return out

    def prepare(self, item: NewMemory, where: str) -> Prepared:
        """Validate and sanitize one item."""
        checked = self.check_new(item, where)
        cleaned = sanitize_text(checked.content)
        if not cleaned.text.strip():
            raise InvalidInputError(
                "content is empty once hidden characters and instructions are removed",
                field=f"{where}content",
            )
        checked = checked.model_copy(update={"content": cleaned.text})
        return Prepared(item=checked, changes=cleaned.changes, digest=content_hash(cleaned.text))
