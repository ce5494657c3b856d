"""Does proactive surfacing learn? A simulation with hidden ground truth.

A synthetic team keeps memories about eight technical areas. Conversations
drift from one area to the area that usually follows it (hidden transitions:
talk about caching leads to talk about databases, and so on), and each one
will need one memory of the second area at a known message, where the user
recalls it explicitly. Users have hidden tastes: which kinds of insight
(bug fixes, patterns, decisions, insights) they use in which kind of
conversation. A persona answers every offer: the needed memory is used; a
memory on the conversation's areas is found helpful with the user's taste
for its kind, else ignored; an off-topic one is dismissed.

The real engine (embedded store, spaCy extraction, hashing embedder) runs the
same conversations twice, each on its own store: once learning (topic
transitions, kind bandit, confidence model, thresholds, edges) and once as
the fixed baseline (seed thresholds, no learning). Per block of episodes it
prints precision ((used + helpful) / surfaced), dismissal rate,
recall-before-search (the explicit recall's top results had been offered
earlier in the conversation, as the engine counts it), the median lead time
in messages (offer to need), and, from the hidden truth, how often the one
memory the conversation needed had been offered before the recall ("need").
After the run it counts what engagement taught the graph: associations
between memories (and how many join two areas), and the memories' edges to
area words (and how many lead to another area's words: learning that spread
beyond what the memory is about).

    .venv/bin/python bench/simulate.py [--episodes 400] [--block 50] [--seed 7] [--json]

Deterministic under a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import EdgeType, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.surface import SurfaceConfig

COLLECTION = "sim:team"
AREAS: dict[str, tuple[str, ...]] = {
    "cache": ("redis", "cache eviction", "ttl", "memcached", "hit ratio", "cache key", "warmup"),
    "database": (
        "postgres", "index scan", "deadlock", "vacuum", "replica lag", "query plan", "row lock",
    ),
    "deploy": (
        "kubernetes", "rollout", "helm chart", "canary", "readiness probe", "pod", "rollback",
    ),
    "queue": (
        "kafka", "consumer group", "partition", "offset", "dead letter", "backpressure", "broker",
    ),
    "auth": ("oauth", "token refresh", "session cookie", "jwt", "scope", "login flow", "sso"),
    "frontend": (
        "react", "bundle size", "hydration", "render loop", "css grid", "webpack", "component",
    ),
    "observability": (
        "prometheus", "alert rule", "trace span", "log sampling", "dashboard", "slo",
        "latency histogram",
    ),
    "storage": (
        "s3 bucket", "lifecycle rule", "multipart upload", "checksum", "object key", "retention",
        "archive tier",
    ),
}  # fmt: skip
SHARED = ("timeout", "latency", "config file", "retry policy", "error rate", "client library")
"""Words every area uses: they make off-topic memories look relevant."""
NEXT_AREA = {
    "cache": "database",
    "database": "observability",
    "deploy": "observability",
    "queue": "storage",
    "auth": "frontend",
    "frontend": "deploy",
    "observability": "deploy",
    "storage": "queue",
}
KINDS = ("bug_fix", "pattern", "decision", "insight")
TYPES = ("debugging", "help-seeking", "exploration")
TASTE_BY_TYPE: dict[str, dict[str, float]] = {
    "debugging": {"bug_fix": 0.9, "pattern": 0.6, "decision": 0.1, "insight": 0.3},
    "help-seeking": {"bug_fix": 0.6, "pattern": 0.9, "decision": 0.2, "insight": 0.5},
    "exploration": {"bug_fix": 0.1, "pattern": 0.4, "decision": 0.9, "insight": 0.7},
}
OPENERS = {
    "debugging": "we have an error and something is failing",
    "help-seeking": "can you help me, how do I handle this",
    "exploration": "let us explore an idea and compare the design options",
}
TEMPLATES = {
    "bug_fix": "Fixed {a} trouble: {b} was wrong, so we changed {c} and checked {d}",
    "pattern": "Pattern for {a}: keep {b} close to {c} and watch {d}",
    "decision": "We decided to use {a} with {b} rather than {c}, because of {d}",
    "insight": "Insight: {a} and {b} interact, {c} shows it before {d} does",
}
MESSAGES = 8
NEED_AT = 7  # the explicit recall follows this message (1-based)


@dataclass
class World:
    memories: dict[str, tuple[str, str, tuple[str, ...]]]  # id -> (area, kind, terms)
    users: list[dict[str, dict[str, float]]]


@dataclass
class Episode:
    conversation: str
    user: int
    type: str
    given_type: bool
    start: str
    target: str
    need: str
    messages: list[str]
    query: str


@dataclass
class Learned:
    """What engagement taught the graph over the whole run, read against the
    hidden truth: edges from a memory to the words of another area are learning
    that spread beyond what the memory is about."""

    associations: int = 0
    associations_across_areas: int = 0
    concept_edges: int = 0
    concept_edges_to_other_areas: int = 0

    def figures(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Tally:
    surfaced: int = 0
    used: int = 0
    helpful: int = 0
    ignored: int = 0
    dismissed: int = 0
    needs: int = 0
    before: int = 0
    need_before: int = 0
    leads: list[int] = field(default_factory=list)

    def figures(self) -> dict[str, float | None]:
        return {
            "precision": _ratio(self.used + self.helpful, self.surfaced),
            "dismissal_rate": _ratio(self.dismissed, self.surfaced),
            "recall_before_search": _ratio(self.before, self.needs),
            "median_lead_time": float(statistics.median(self.leads)) if self.leads else None,
            "needed_memory_before": _ratio(self.need_before, self.needs),
            "surfaced": self.surfaced,
        }


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def make_world(rng: random.Random) -> World:
    memories: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    for area, terms in AREAS.items():
        for i in range(12):
            kind = KINDS[i % len(KINDS)]
            shared = rng.sample(SHARED, 1 + (i % 2))
            picked = (*rng.sample(terms, 4 - len(shared)), *shared)
            memories[f"{area}-{i:02d}"] = (area, kind, tuple(rng.sample(picked, 4)))
    users = []
    for _ in range(6):
        users.append(
            {
                t: {k: min(1.0, max(0.0, p + rng.uniform(-0.1, 0.1))) for k, p in kinds.items()}
                for t, kinds in TASTE_BY_TYPE.items()
            }
        )
    return World(memories, users)


def memory_text(kind: str, terms: tuple[str, ...]) -> str:
    a, b, c, d = terms
    return TEMPLATES[kind].format(a=a, b=b, c=c, d=d)


def make_episode(world: World, rng: random.Random, n: int) -> Episode:
    user = rng.randrange(len(world.users))
    ctype = rng.choice(TYPES)
    start = rng.choice(list(AREAS))
    target = NEXT_AREA[start] if rng.random() < 0.85 else rng.choice(list(AREAS))
    taste = world.users[user][ctype]
    options = [m for m, (area, _, _) in world.memories.items() if area == target]
    weights = [taste[world.memories[m][1]] ** 2 + 0.02 for m in options]
    need = rng.choices(options, weights=weights)[0]
    need_terms = world.memories[need][2]
    own = [t for t in need_terms if t in AREAS[target]] or list(need_terms)
    start_terms, target_terms = AREAS[start], AREAS[target]
    # Three messages on the first area (with the words every area uses), then a
    # drift toward the second, closing in on the needed memory's own words.
    messages = [f"{OPENERS[ctype]}: the {rng.choice(start_terms)} is acting up"]
    a, b = rng.sample(start_terms, 2)
    messages.append(f"I looked at the {a} and the {b} again")
    a = rng.choice(start_terms)
    b, c = rng.sample(SHARED, 2)
    messages.append(f"the {a} shows a {b} and a {c}")
    messages.append(
        f"the {rng.choice(start_terms)} seems fine now, maybe the {rng.choice(target_terms)}"
    )
    messages.append(f"the {rng.choice(target_terms)} again, and the {rng.choice(own)}")
    a, b = rng.choice(own), rng.choice(need_terms)
    messages.append(f"it must be the {a} with the {b}")
    a, b = rng.sample(need_terms, 2)
    messages.append(f"how did we deal with {a} and {b} last time")
    messages.append("thanks, that sorted it out")
    return Episode(
        conversation=f"conv-{n:05d}",
        user=user,
        type=ctype,
        given_type=rng.random() < 0.6,
        start=start,
        target=target,
        need=need,
        messages=messages,
        query=" ".join(need_terms),
    )


def react(world: World, ep: Episode, memory_id: str, rng: random.Random) -> str:
    """The persona's answer to an offer."""
    if memory_id == ep.need:
        return "used"
    area, kind, _ = world.memories[memory_id]
    if area in (ep.start, ep.target):
        return "helpful" if rng.random() < world.users[ep.user][ep.type][kind] else "ignored"
    return "dismissed" if rng.random() < 0.9 else "ignored"


def learned_edges(service: Hippocampus, world: World) -> Learned:
    """Count the memories' ASSOCIATED edges and their edges to concepts named
    after another area's words (each area word read as the extractor reads it)."""
    terms = [(area, t) for area, words in AREAS.items() for t in words]
    read = service.extractor.extract_many([t for _, t in terms])
    area_of: dict[str, set[str]] = {}
    for (area, _), extraction in zip(terms, read, strict=True):
        for name in extraction.concepts:
            area_of.setdefault(name, set()).add(area)
    learned, pairs = Learned(), set()
    for mid, (area, _, _) in world.memories.items():
        for e in service.store.edges_of(COLLECTION, mid):
            if e.type == EdgeType.ASSOCIATED:
                pairs.add((min(e.source, e.target), max(e.source, e.target)))
            elif e.type == EdgeType.ABOUT and e.target in area_of:
                learned.concept_edges += 1
                learned.concept_edges_to_other_areas += area not in area_of[e.target]
    learned.associations = len(pairs)
    learned.associations_across_areas = sum(
        world.memories[a][0] != world.memories[b][0] for a, b in pairs
    )
    return learned


def run_engine(
    world: World, episodes: list[Episode], *, learn: bool, seed: int, block: int
) -> tuple[list[Tally], Learned]:
    embedder, extractor = HashingEmbedder(), SpacyConceptExtractor()
    with tempfile.TemporaryDirectory(prefix="hippo-sim-") as tmp:
        service = Hippocampus(
            EmbeddedStore(Path(tmp) / "data", synchronous="NORMAL"),
            embedder,
            extractor,
            surfacing=SurfaceConfig(learn=learn),
            random_seed=seed,
        )
        try:
            service.remember_many(
                COLLECTION,
                [
                    NewMemory(id=mid, content=memory_text(kind, terms), category=kind)
                    for mid, (_, kind, terms) in world.memories.items()
                ],
            )
            rng = random.Random(seed * 7919 + (1 if learn else 0))
            clock = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
            tallies: list[Tally] = []
            for n, ep in enumerate(episodes):
                if n % block == 0:
                    tallies.append(Tally())
                tally = tallies[-1]
                offered_at: dict[str, int] = {}
                for i, text in enumerate(ep.messages, start=1):
                    clock += timedelta(seconds=rng.randint(40, 120))
                    out = service.message(
                        COLLECTION,
                        ep.conversation,
                        text,
                        at=clock,
                        conversation_type=ep.type if ep.given_type else None,
                    )
                    if i == NEED_AT:
                        result = service.recall(
                            COLLECTION,
                            ep.query,
                            limit=3,
                            learn=learn,
                            now=clock,
                            conversation_id=ep.conversation,
                        )
                        tally.needs += 1
                        if result.surfaced_before:
                            tally.before += 1
                            tally.leads.append(max(s.lead for s in result.surfaced_before))
                        tally.need_before += ep.need in offered_at
                    for insight in out.insights:
                        tally.surfaced += 1
                        offered_at.setdefault(insight.memory.id, i)
                        answer = react(world, ep, insight.memory.id, rng)
                        setattr(tally, answer, getattr(tally, answer) + 1)
                        service.engage(
                            COLLECTION,
                            insight.surfacing_id,
                            answer,
                            now=clock + timedelta(seconds=20),
                        )
                clock += timedelta(hours=rng.randint(1, 6))
            return tallies, learned_edges(service, world)
        finally:
            service.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="final block only, as JSON")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    world = make_world(rng)
    episodes = [make_episode(world, rng, n) for n in range(args.episodes)]
    results: dict[str, list[Tally]] = {}
    edges: dict[str, Learned] = {}
    for name, learn in (("learning", True), ("baseline", False)):
        t0 = time.perf_counter()
        results[name], edges[name] = run_engine(
            world, episodes, learn=learn, seed=args.seed, block=args.block
        )
        print(
            f"{name}: {args.episodes} episodes in {time.perf_counter() - t0:.1f} s", file=sys.stderr
        )

    if args.json:
        final: dict[str, Any] = {}
        for name, tallies in results.items():
            figures = tallies[-1].figures()
            figures.pop("surfaced")
            figures.pop("needed_memory_before")
            final[name] = figures
        final["learned_edges"] = {name: e.figures() for name, e in edges.items()}
        print(json.dumps(final))
        return 0
    print(f"proactive surfacing simulation: {args.episodes} episodes, seed {args.seed}")
    header = (
        f"{'block':>5} {'engine':<9} {'surfaced':>8} {'precision':>9} {'dismissal':>9}"
        f" {'before':>6} {'lead':>5} {'need':>5}"
    )
    print(header)
    for b in range(len(results["learning"])):
        for name in results:
            f = results[name][b].figures()
            print(
                f"{b + 1:>5} {name:<9} {f['surfaced']:>8} {_fmt(f['precision']):>9}"
                f" {_fmt(f['dismissal_rate']):>9} {_fmt(f['recall_before_search']):>6}"
                f" {_fmt(f['median_lead_time']):>5} {_fmt(f['needed_memory_before']):>5}"
            )
    for name, e in edges.items():
        print(
            f"{name}: {e.associations} associations learned ({e.associations_across_areas}"
            f" across areas); {e.concept_edges} edges to area words, "
            f"{e.concept_edges_to_other_areas} of them to another area's"
        )
    return 0


def _fmt(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.3g}"


if __name__ == "__main__":
    sys.exit(main())
