"""Events the store logs: retrievals, engagement, surfacing, explicit searches.
Metrics and learning are computed from this log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    at: datetime
    memory_ids: list[str] = Field(default_factory=list)
    payload: dict[str, Any] = Field(default_factory=dict)


class EventRetention(BaseModel):
    """How much of each collection's event log is kept.

    Every retrieval, engagement, surfacing and merge appends an event, so a
    server that runs for months would otherwise keep a log that only grows.
    Nothing reads old events back: /stats and /metrics report the running
    totals by type (which compaction leaves as they were), surfacing metrics
    come from their own counters, and export carries memories, edges and
    learned state, not the log. So the maintenance pass drops what falls
    outside both bounds below; the store keeps counting what it dropped.

    Attributes:
        max_age_days: events appended longer ago than this go (0: kept
            whatever their age). By when the store took them, not the time an
            event names (a client's clock, an imported conversation's dates),
            so a date far in the past or the future neither drops an event at
            once nor keeps it for ever.
        max_events: at most this many events per collection, the newest
            (0: no cap): bounds the log of a collection busier than its age
            bound allows for.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_age_days: float = Field(default=90.0, ge=0.0)
    max_events: int = Field(default=1_000_000, ge=0)
