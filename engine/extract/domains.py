"""Domain vocabulary: which words put a text in which domain.

Matched against lemmas, so "timeouts" and "timed out" both count for
performance. A text gets every domain it has a cue for, most cues first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def _cues(words: str) -> frozenset[str]:
    return frozenset(words.split())


DOMAIN_CUES: dict[str, frozenset[str]] = {
    "performance": _cues(
        "slow slowness latency lag laggy timeout performance fast speed throughput bottleneck "
        "cache caching memory cpu profiling profile load p95 p99 optimization optimize"
    ),
    "mobile": _cues("mobile ios android app iphone phone tablet smartphone"),
    "payments": _cues(
        "payment pay checkout billing invoice refund card stripe gateway subscription "
        "charge purchase pricing price"
    ),
    "security": _cues(
        "security secure auth authentication authorization password token vulnerability "
        "injection xss csrf encryption encrypt permission secret credential exploit attack"
    ),
    "database": _cues(
        "database db sql query index postgres postgresql mysql sqlite migration schema "
        "transaction deadlock table row neo4j cypher"
    ),
    "testing": _cues(
        "test testing tests fuzz fuzzing coverage assertion assert mock regression flaky "
        "pytest unittest qa"
    ),
    "debugging": _cues(
        "bug error crash exception traceback debug debugging fix failure fail race "
        "segfault hang leak broken"
    ),
    "infrastructure": _cues(
        "deploy deployment kubernetes k8s docker container server cluster ci pipeline "
        "outage network dns infrastructure cloud aws terraform rollout rollback"
    ),
    "frontend": _cues(
        "ui ux css html react browser page button layout render rendering frontend "
        "dashboard screen component"
    ),
    "api": _cues("api endpoint rest request response http graphql webhook sdk"),
    "architecture": _cues(
        "architecture design service microservice module coupling interface abstraction "
        "refactor refactoring monolith dependency"
    ),
    "team": _cues(
        "team meeting lunch hiring standup retro retrospective onboarding colleague "
        "manager offsite holiday"
    ),
    "customer": _cues(
        "customer user client support ticket complaint retention churn feedback onboarding"
    ),
    "machine learning": _cues(
        "model embedding training inference neural dataset classifier llm prompt vector"
    ),
}


def domains_for(lemmas: Iterable[str], limit: int = 4) -> tuple[str, ...]:
    """Domains cued by the lemmas, strongest first (ties by name, for determinism)."""
    hits: Counter[str] = Counter()
    for lemma in lemmas:
        word = lemma.casefold()
        for domain, cues in DOMAIN_CUES.items():
            if word in cues:
                hits[domain] += 1
    ranked = sorted(hits.items(), key=lambda item: (-item[1], item[0]))
    return tuple(domain for domain, _ in ranked[:limit])
