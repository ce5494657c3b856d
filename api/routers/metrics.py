"""Prometheus exposition of surfacing figures and recall latency, per collection
the caller's key may see."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from hippocampus.api.auth import AccessDep
from hippocampus.api.deps import HEAVY, ServiceDep

router = APIRouter(tags=["metrics"])

_HELP = {
    "hippo_memories": ("gauge", "Memories stored."),
    "hippo_surfaced_total": ("counter", "Insights offered proactively."),
    "hippo_engagements_total": ("counter", "Engagements with offered insights, by kind."),
    "hippo_surfacing_precision": ("gauge", "(used + helpful) / surfaced."),
    "hippo_dismissal_rate": ("gauge", "dismissed / surfaced, by conversation type."),
    "hippo_recall_before_search": (
        "gauge",
        "Explicit recalls whose top results had been offered earlier / explicit recalls.",
    ),
    "hippo_explicit_recalls_total": ("counter", "Recalls made inside a conversation."),
    "hippo_lead_time_messages": ("gauge", "Median messages from offer to explicit recall."),
    "hippo_lead_time_mean_messages": ("gauge", "Mean messages from offer to explicit recall."),
    "hippo_confidence_calibration_error": (
        "gauge",
        "Expected calibration error of offer confidence against use (0: calibrated).",
    ),
    "hippo_decay_effectiveness": (
        "gauge",
        "Engaged offers of memories due for spaced repetition that were used / engaged ones.",
    ),
    "hippo_average_quality": ("gauge", "Mean quality score of the memories that have one."),
    "hippo_retrievals_total": ("counter", "Recalls made of the collection."),
    "hippo_recall_latency_ms": ("gauge", "Recall latency in this process, by quantile."),
    "hippo_recall_lexical_lean": (
        "gauge",
        "What the collection's recent recalls multiply the lexical weight by (1: none).",
    ),
}


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@router.get("/metrics", response_class=PlainTextResponse, dependencies=[HEAVY])
def metrics(access: AccessDep, service: ServiceDep) -> PlainTextResponse:
    """Prometheus text format. With API keys configured, a key sees only its own
    collections."""
    samples: dict[str, list[str]] = {name: [] for name in _HELP}

    def add(name: str, value: float | None, **labels: str) -> None:
        if value is None:
            return
        text = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
        samples[name].append(f"{name}{{{text}}} {value:g}")

    for c in service.collections():
        if not access.allows(c):
            continue
        m = service.surfacing_metrics(c)
        stats = service.stats(c)
        add("hippo_memories", stats.memories, collection=c)
        add("hippo_average_quality", stats.average_quality, collection=c)
        add("hippo_retrievals_total", stats.retrieval_count, collection=c)
        add("hippo_surfaced_total", m.surfaced, collection=c)
        for kind, n in m.engagements.items():
            add("hippo_engagements_total", n, collection=c, engagement=kind)
        add("hippo_surfacing_precision", m.precision, collection=c)
        add("hippo_dismissal_rate", m.dismissal_rate, collection=c, type="all")
        for t, rate in m.dismissal_rate_by_type.items():
            add("hippo_dismissal_rate", rate, collection=c, type=t)
        add("hippo_explicit_recalls_total", m.explicit_recalls, collection=c)
        add("hippo_recall_before_search", m.recall_before_search, collection=c)
        add("hippo_lead_time_messages", m.median_lead_time, collection=c)
        add("hippo_lead_time_mean_messages", m.mean_lead_time, collection=c)
        add("hippo_confidence_calibration_error", m.calibration_error, collection=c)
        add("hippo_decay_effectiveness", m.decay_effectiveness, collection=c)
        latency = service.latency(c)
        add("hippo_recall_latency_ms", latency.p50_ms, collection=c, quantile="0.5")
        add("hippo_recall_latency_ms", latency.p95_ms, collection=c, quantile="0.95")
        add("hippo_recall_lexical_lean", service.corroboration(c).lexical_lean, collection=c)
    lines: list[str] = []
    for name, (kind, text) in _HELP.items():
        lines.append(f"# HELP {name} {text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(samples[name])
    return PlainTextResponse("\n".join(lines) + "\n", media_type="text/plain; version=0.0.4")
