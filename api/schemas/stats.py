"""Bodies of ``/stats`` and of the health and readiness probes."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from hippocampus.api.schemas.maintenance import TrainingRunOut
from hippocampus.metrics import CachedGraphHealth
from hippocampus.service import CollectionStats, Corroboration, Latency
from hippocampus.surface import SurfaceMetrics


class GraphHealthOut(BaseModel):
    """Counts as they are now; the structural figures (clustering, components,
    largest_component, weight_histogram) as computed `age_s` seconds ago."""

    nodes: int
    nodes_by_kind: dict[str, int]
    edges: int
    edges_by_type: dict[str, int]
    mean_degree: float
    clustering: float = Field(description="Average clustering coefficient, as of computed_at.")
    clustering_sampled: bool = Field(description="Whether clustering is estimated by sampling.")
    components: int = Field(description="Connected components, as of computed_at.")
    largest_component: int = Field(description="Nodes in the largest one, as of computed_at.")
    weight_histogram: list[int] = Field(
        description="Edges per weight decile, 0.0-0.1 first, as of computed_at."
    )
    computed_at: datetime = Field(description="When the structural figures were computed.")
    age_s: float = Field(description="How old they are, in seconds.")
    took_s: float = Field(description="How long computing them took, in seconds.")


class QualityOut(BaseModel):
    min_score: float = Field(description="Memories scoring below this are rejected.")
    model_version: int = Field(description="0: the prior; +1 per retrained model kept.")
    trained_at: datetime | None = Field(description="When the model in use was trained.")
    feedback_seen: int = Field(description="Memories with feedback at the last retraining.")
    last_training: TrainingRunOut | None = Field(
        description="The last retraining (kept or not), with held-out metrics."
    )


class SurfacingMetricsOut(BaseModel):
    """Proactive surfacing in this collection."""

    surfaced: int
    engagements: dict[str, int]
    precision: float | None = Field(description="(used + helpful) / surfaced")
    dismissal_rate: float | None
    dismissal_rate_by_type: dict[str, float]
    explicit_recalls: int = Field(description="Recalls made with a conversation_id.")
    recall_before_search: float | None = Field(
        description="Explicit recalls whose top results had been offered earlier / explicit recalls"
    )
    median_lead_time: float | None = Field(description="Messages from offer to explicit recall.")
    mean_lead_time: float | None = Field(
        default=None, description="The same, averaged (the seed's average lead time)."
    )
    calibration_error: float | None = Field(
        default=None,
        description="Expected calibration error of offer confidence against use (0: calibrated).",
    )
    decay_effectiveness: float | None = Field(
        default=None,
        description="Offers of memories due for spaced repetition that were used / engaged ones.",
    )


class LatencyOut(BaseModel):
    """Recall latency in this process (the most recent recalls)."""

    recalls: int
    p50_ms: float | None
    p95_ms: float | None


class CorroborationOut(BaseModel):
    """How well similarity has corroborated the words in this process's recent
    recalls, and what that does to the default recipe."""

    recalls: int = Field(description="Recent recalls measured (at most 64).")
    median: float | None = Field(
        description=(
            "Median of where each recall's best word matches sat among its best "
            "similarities, in standard deviations (null until 8 recalls)."
        )
    )
    lexical_lean: float = Field(
        description="What that multiplies the lexical weight by (1.0: no lean on words)."
    )


class StatsOut(BaseModel):
    collection: str
    memories: int
    by_category: dict[str, int]
    by_tier: dict[str, int]
    pending_embeddings: int
    hubs: dict[str, int]
    edges: dict[str, int]
    events: int = Field(description="Events ever logged, those compacted away included.")
    events_retained: int = Field(
        default=0,
        description="Events the log still holds: the retention (HIPPO_EVENTS__*) drops the others.",
    )
    embedder: str
    extractor: str
    quality: QualityOut
    average_quality: float | None = Field(
        description="Mean quality score of the memories that have one."
    )
    retrieval_count: int = Field(description="Recalls made of the collection.")
    graph: GraphHealthOut | None = None
    surfacing: SurfacingMetricsOut | None = None
    latency: LatencyOut | None = None
    corroboration: CorroborationOut | None = None
    warnings: list[str] = Field(
        default_factory=list, description="e.g. the collection holds no memories at all."
    )

    @classmethod
    def from_engine(
        cls,
        stats: CollectionStats,
        health: CachedGraphHealth | None,
        surfacing: SurfaceMetrics | None = None,
        latency: Latency | None = None,
        corroboration: Corroboration | None = None,
    ) -> StatsOut:
        out = cls.model_validate(stats.model_dump())
        if health is not None:
            out.graph = GraphHealthOut.model_validate(health.model_dump())
        if surfacing is not None:
            out.surfacing = SurfacingMetricsOut.model_validate(surfacing.model_dump())
        if latency is not None:
            out.latency = LatencyOut.model_validate(latency.model_dump())
        if corroboration is not None:
            out.corroboration = CorroborationOut.model_validate(corroboration.model_dump())
        return out


class HealthOut(BaseModel):
    status: str = "ok"
    pid: int = Field(
        description="The answering process: with several workers (``hippo serve "
        "--workers N``), which one a connection reached."
    )


class ReadyOut(BaseModel):
    ready: bool
    store: str
    embedder: str
    extractor: str
    degraded: list[str] = Field(
        default_factory=list,
        description="What works in a lesser way while the server still serves: an "
        "embedder that fails (memories are stored for re-embedding, recall uses text "
        "and graph).",
    )
