"""Domain vocabulary: which words put a text in which domain.

Matched against the words as the extractor reads them (nouns singular, verbs
lemmatized), so "timeouts" and "timed out" both count for performance. A text
gets every domain it has a cue for, most cues first, except that a cue that is
ambiguous alone (:data:`AMBIGUOUS_CUES`: "Caroline went to the LGBTQ support
group" is not about customer support) names its domain only beside a second,
different cue of that domain.
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


AMBIGUOUS_CUES = frozenset(
    """
    attack charge design fail fast meeting model network performance price race rest screen
    security service support team training
    """.split()
)
"""Cues with an everyday sense besides their domain's: the cues said by at least
0.5% of the dev sets' Wikipedia passages (MuSiQue's and HotpotQA's, none of them
about software), as ``bench/generic_words.py`` measures them: ``team`` 4.8%,
``service`` 2.7%, ``support`` 2.2%. Each names its domain only beside another
cue of the domain."""


def domains_for(words: Iterable[str], limit: int = 4) -> tuple[str, ...]:
    """Domains cued by the words, strongest first (ties by name, for determinism).
    A domain whose only cues are one ambiguous word is left out."""
    hits: Counter[str] = Counter()
    said: dict[str, set[str]] = {}
    for word in map(str.casefold, words):
        for domain, cues in DOMAIN_CUES.items():
            if word in cues:
                hits[domain] += 1
                said.setdefault(domain, set()).add(word)
    ranked = sorted(
        (
            item
            for item in hits.items()
            if len(said[item[0]]) > 1 or not said[item[0]] <= AMBIGUOUS_CUES
        ),
        key=lambda item: (-item[1], item[0]),
    )
    return tuple(domain for domain, _ in ranked[:limit])
