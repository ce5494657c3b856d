"""Bodies of ``/maintenance``: decay, tiers, quality retraining, reindexing."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.extract.quality import TrainingRun
from hippocampus.service import TierReport


class DecayOut(BaseModel):
    collection: str
    decayed: int = Field(description="Edges that lost weight in this pass.")


Lifecycle = Literal["active", "promoted", "archived", "quarantined"]
"""A memory's tier, or ``promoted`` within the active tier."""


class TierChangeOut(BaseModel):
    id: str
    before: Lifecycle = Field(alias="from")
    after: Lifecycle = Field(alias="to")
    reason: str

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


class TrainingMetricsOut(BaseModel):
    examples: int = Field(description="Held-out memories with feedback it was scored on.")
    log_loss: float
    accuracy: float
    auc: float | None


class TrainingRunOut(BaseModel):
    at: datetime
    feedback: int = Field(description="Memories with feedback in the collection.")
    train_examples: int
    accepted: bool = Field(description="Whether the retrained model replaced the old one.")
    reason: str
    candidate: TrainingMetricsOut | None = Field(description="The retrained model, held out.")
    previous: TrainingMetricsOut | None = Field(description="The model it would replace.")

    @classmethod
    def from_engine(cls, run: TrainingRun) -> TrainingRunOut:
        return cls.model_validate(run.model_dump())


class TiersOut(BaseModel):
    collection: str
    examined: int
    archived: int
    quarantined: int
    restored: int
    promoted: int = Field(default=0, description="Active memories promoted (high, useful use).")
    demoted: int = Field(default=0, description="Promoted memories that lost the mark.")
    changes: list[TierChangeOut] = Field(description="The memories that moved (first 100).")
    feedback: int = Field(description="Memories with feedback; every 500 more retrain quality.")
    retrained: TrainingRunOut | None

    @classmethod
    def from_engine(cls, report: TierReport) -> TiersOut:
        return cls(
            collection=report.collection,
            examined=report.examined,
            archived=report.archived,
            quarantined=report.quarantined,
            restored=report.restored,
            promoted=report.promoted,
            demoted=report.demoted,
            changes=[TierChangeOut.model_validate(c) for c in report.changes],
            feedback=report.feedback,
            retrained=(
                TrainingRunOut.from_engine(report.retrained)
                if report.retrained is not None
                else None
            ),
        )


class ReindexOut(BaseModel):
    collection: str
    model: str = Field(description="The embedding model vectors now come from.")
    reindexed: int
    remaining: int = Field(description="Memories still waiting for a vector from this model.")
