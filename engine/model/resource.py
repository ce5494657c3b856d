"""Structured records an application indexes (work items, tickets), by its own id."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

CustomValue = str | int | float | bool | list[str | int | float | bool] | dict[str, object] | None
"""A custom field's value as the application has it; which ones are indexed is
decided when the document is built."""

RESOURCE_SOURCE = "resource"
"""The ``source`` of memories that index a resource."""

RESOURCE_CATEGORY = "work_item"
"""The ``category`` of memories that index a resource."""

ARCHIVED_STATUS = "ARCHIVED"
"""A resource with this status (any case) is removed from the index."""


class Resource(BaseModel):
    """One record: its title and status always, the rest when it has them."""

    model_config = ConfigDict(extra="forbid")

    title: str
    status: str
    description: str | None = None
    category: str | None = None
    priority: str | None = None
    custom_fields: dict[str, CustomValue] = Field(default_factory=dict)

    @property
    def archived(self) -> bool:
        return self.status.strip().upper() == ARCHIVED_STATUS
