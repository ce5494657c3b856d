"""Synthetic but realistic memory texts and queries for the benchmarks.

Engineering-team knowledge (incidents, bug fixes, decisions, customer reports,
patterns, outcomes, work items) made from templates and a vocabulary.
Deterministic under a seed, and every text is distinct after the engine's own
normalization: the engine de-duplicates identical content, so repeats would
make a benchmark store fewer memories than it claims.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from hippocampus.model.memory import content_hash

SERVICES = (
    "checkout", "billing", "auth", "search", "notifications", "payments gateway",
    "inventory", "recommendations", "user profile", "reporting", "ingest pipeline",
    "mobile backend", "admin console", "webhook dispatcher", "pricing engine",
    "order history", "feature flag service", "image resizer", "session store", "export worker",
)  # fmt: skip
COMPONENTS = (
    "connection pool", "retry loop", "cache layer", "message consumer", "cron job",
    "rate limiter", "JSON serializer", "ORM query", "background worker", "load balancer",
    "DNS resolver", "TLS handshake", "database migration", "index rebuild", "websocket handler",
    "circuit breaker", "batch exporter", "token refresh", "CSV parser", "GraphQL resolver",
)  # fmt: skip
TECH = (
    "Postgres", "Redis", "Kafka", "Kubernetes", "nginx", "Elasticsearch", "S3", "Celery",
    "gRPC", "React", "Terraform", "Stripe", "SQLite", "RabbitMQ", "Django", "FastAPI",
    "Go", "Node", "Neo4j", "Envoy",
)  # fmt: skip
SYMPTOMS = (
    "p99 latency climbed past {ms} ms", "requests timed out after {s} seconds",
    "memory grew {mb} MB per hour until OOM kills",
    "error rate jumped to {pct}%", "duplicate rows appeared in the orders table",
    "the queue backed up to {k} thousand messages", "CPU sat at {pct}% on every node",
    "users were logged out at random", "the nightly job ran for {h} hours instead of one",
    "webhooks were delivered twice", "the dashboard showed stale numbers for {m} minutes",
    "deploys hung at the health check", "disk filled up on the primary",
    "half the search results were missing", "refunds were issued in the wrong currency",
)  # fmt: skip
CAUSES = (
    "a missing index on {col}", "an N+1 query in the {comp}", "a retry storm without jitter",
    "an unbounded in-process cache", "a timezone bug around daylight saving",
    "a race between two workers claiming the same job", "a connection leak in the {comp}",
    "a stale DNS entry after the failover", "a default timeout of {s} seconds",
    "a lock held across a network call", "a feature flag left on in production",
    "a schema change that was not backward compatible", "clock skew between {n} hosts",
    "an exponential regex on user input", "a misconfigured autoscaler threshold",
)  # fmt: skip
FIXES = (
    "added an index on {col}", "batched the lookups into one query",
    "added exponential backoff with full jitter", "capped the cache at {k} thousand entries",
    "stored timestamps in UTC and converted at the edge",
    "made the job claim atomic with a row lock",
    "closed connections in a finally block", "lowered the DNS TTL to {s} seconds",
    "raised the timeout and added a deadline per request",
    "moved the network call outside the lock",
    "removed the flag and deleted the dead code path",
    "split the migration into expand and contract steps",
    "synced clocks with chrony on every host", "replaced the regex with a linear parser",
    "tuned the autoscaler to scale on queue depth",
)  # fmt: skip
COLUMNS = (
    "orders.customer_id", "events.created_at", "sessions.token", "invoices.account_id",
    "payments.idempotency_key", "users.email", "jobs.status", "audit_log.actor_id",
)  # fmt: skip
TEAMS = (
    "platform", "payments", "growth", "mobile", "data", "SRE", "search", "identity",
    "frontend", "infra",
)  # fmt: skip
CUSTOMERS = (
    "a logistics customer", "an enterprise tenant in Germany", "a small retailer",
    "a healthcare client", "a fintech startup", "a university", "a travel agency",
    "a game studio", "a public-sector customer", "a marketplace seller",
)  # fmt: skip
PLATFORMS = ("iOS", "Android", "Safari", "Firefox", "Chrome", "the desktop app", "the CLI")
DECISIONS = (
    "use {tech} for the {svc} instead of building our own",
    "keep the {svc} as a module of the monolith until the team doubles",
    "require idempotency keys on every write endpoint of the {svc}",
    "run database migrations in a separate deploy step",
    "page only on symptoms users feel, not on causes",
    "store money as integer minor units everywhere",
    "version the public API in the URL path",
    "drop support for {plat} versions older than two years",
    "move the {svc} to {tech} behind a feature flag",
    "make every background job safe to run twice",
)  # fmt: skip
REASONS = (
    "because the on-call load was unsustainable", "because it cut infrastructure cost by {pct}%",
    "because two incidents this quarter came from the same gap",
    "because customers kept asking for it in support tickets",
    "because the old approach could not scale past {k} thousand requests per minute",
    "because audits require a clear trail", "because it removes a whole class of bugs",
)  # fmt: skip
PATTERNS = (
    "When the {comp} in {tech} misbehaves under load, check {cause} first; it explains most cases we have seen.",  # noqa: E501
    "Before touching the {svc}, read the runbook: {fix} is the safe first move and {cause} the usual suspect.",  # noqa: E501
    "For flaky tests in the {svc} suite, look for shared state in the {comp}; isolating it fixed {n} tests last time.",  # noqa: E501
    "Reviews of {tech} changes go faster when the author lists rollback steps and the dashboards to watch.",  # noqa: E501
    "If {sym} right after a deploy, roll back first and debug later; the {team} team lost {h} hours once by doing the opposite.",  # noqa: E501
)  # fmt: skip

QUERIES = (
    "why did checkout latency spike after the deploy",
    "how do we stop retry storms when a downstream service is slow",
    "what causes duplicate webhook deliveries",
    "memory leak in the background worker, pods OOM killed",
    "have we seen connection pool exhaustion in Postgres before",
    "how should database migrations be rolled out safely",
    "customers logged out randomly on mobile",
    "timezone bug with daylight saving time in reports",
    "why did we decide to store money as integer cents",
    "flaky tests caused by shared state",
    "queue backlog growing in Kafka consumer",
    "DNS failover left stale entries",
    "what is our policy on API versioning",
    "search results missing after index rebuild",
    "refund issued in wrong currency",
    "rate limiter configuration for the public API",
    "slow ORM queries and N+1 problems",
    "how to make background jobs idempotent",
    "autoscaler not scaling fast enough under load",
    "TLS handshake failures after certificate rotation",
    "regex denial of service on user input",
    "deploys hanging at health check",
    "disk full on the database primary",
    "lock held during network call causing timeouts",
    "enterprise customer reports slow exports",
)  # fmt: skip

CATEGORY_OF = {
    "incident": "outcome",
    "bug_fix": "bug_fix",
    "decision": "decision",
    "customer": "insight",
    "pattern": "pattern",
    "work_item": "work_item",
}


@dataclass(frozen=True)
class SynthMemory:
    """One generated memory: text, category, tags and a stable external id."""

    id: str
    content: str
    category: str
    tags: tuple[str, ...]


def _fill(rng: random.Random, template: str) -> str:
    slots = {
        "ms": rng.choice((250, 400, 800, 1200, 3000, 5000)),
        "s": rng.choice((2, 5, 10, 30, 60)),
        "mb": rng.choice((40, 120, 300, 800)),
        "pct": rng.choice((3, 7, 12, 25, 40, 90)),
        "k": rng.choice((5, 20, 50, 100, 400)),
        "h": rng.choice((2, 3, 5, 8, 11)),
        "m": rng.choice((10, 20, 45, 90)),
        "n": rng.choice((2, 3, 4, 7, 12)),
        "col": rng.choice(COLUMNS),
        "comp": rng.choice(COMPONENTS),
        "tech": rng.choice(TECH),
        "svc": rng.choice(SERVICES),
        "team": rng.choice(TEAMS),
        "plat": rng.choice(PLATFORMS),
    }
    slots["cause"] = rng.choice(CAUSES).format(**slots)
    slots["fix"] = rng.choice(FIXES).format(**slots)
    slots["sym"] = rng.choice(SYMPTOMS).format(**slots)
    return template.format(**slots)


def _one(rng: random.Random, serial: int) -> tuple[str, str, tuple[str, ...]]:
    kind = rng.choice(tuple(CATEGORY_OF))
    svc, tech, comp = rng.choice(SERVICES), rng.choice(TECH), rng.choice(COMPONENTS)
    team = rng.choice(TEAMS)
    # A ticket-like reference keeps texts distinct without reading like noise.
    ref = f"{team.upper()[:4]}-{1000 + serial}"
    if kind == "incident":
        text = _fill(
            rng,
            f"Incident {ref} in {svc}: {{sym}}. Cause: {{cause}} in the {comp}. "
            f"The {team} team {{fix}}.",
        )
    elif kind == "bug_fix":
        text = _fill(
            rng,
            f"Fixed {ref} in {svc} ({tech}): {{sym}} because of {{cause}}. "
            f"We {{fix}}; a regression test covers it.",
        )
    elif kind == "decision":
        text = _fill(
            rng,
            f"Decision {ref}: we {rng.choice(DECISIONS)} {rng.choice(REASONS)}. "
            f"Owner: the {team} team; revisit next quarter.",
        )
    elif kind == "customer":
        text = _fill(
            rng,
            f"Support ticket {ref}: {rng.choice(CUSTOMERS)} on {rng.choice(PLATFORMS)} reports "
            f"that {{sym}} in the {svc}. Workaround until the fix ships: {{fix}}.",
        )
    elif kind == "pattern":
        text = _fill(rng, rng.choice(PATTERNS)) + f" (see {ref})"
    else:
        text = _fill(
            rng,
            f"Work item {ref}: migrate the {comp} of the {svc} to {tech}; acceptance: "
            f"no regression in p95 latency and {{fix}} along the way.",
        )
    tags = (svc.replace(" ", "-"), tech.lower(), team.lower())
    return text, CATEGORY_OF[kind], tags


def memories(n: int, *, seed: int = 7) -> list[SynthMemory]:
    """``n`` distinct memories, the same list for the same seed."""
    rng = random.Random(seed)
    out: list[SynthMemory] = []
    seen: set[str] = set()
    serial = 0
    while len(out) < n:
        text, category, tags = _one(rng, serial)
        serial += 1
        digest = content_hash(text)
        if digest in seen:
            continue
        seen.add(digest)
        out.append(SynthMemory(f"bench-{len(out):07d}", text, category, tags))
    return out


def queries(n: int, *, seed: int = 11) -> list[str]:
    """``n`` realistic queries: the fixed questions, then variations naming a service."""
    rng = random.Random(seed)
    out = list(QUERIES[:n])
    while len(out) < n:
        base = rng.choice(QUERIES)
        out.append(f"{base} in the {rng.choice(SERVICES)}")
    return out


def iter_texts(n: int, *, seed: int = 7) -> Iterator[str]:
    for m in memories(n, seed=seed):
        yield m.content


# -- long conversations ---------------------------------------------------------------

PEOPLE = ("Priya", "Marco", "Aiko", "Tomas", "Lena", "Omar", "Grace", "Yusuf", "Ines", "Dmitri")

_USER_PARAGRAPHS = (
    "We are seeing {sym} in the {svc} since the {team} team shipped the new {comp}. "
    "{who} thinks it is {cause}, but the dashboards are not conclusive and the on-call "
    "rotation is getting tired of it.",
    "Some context: the {svc} runs on {tech} behind the {comp}, and traffic peaks around "
    "the end of the month when {customer} runs its exports. Last quarter we {fix}, which "
    "helped for a while.",
    "{who} asked me to write down what we decided about the {svc}: we want to {decision}, "
    "{reason}. I am not sure everyone on the {team} team agrees.",
    "Here is what the logs show, roughly: {sym}, then a burst of retries from the {comp}, "
    "then it recovers on its own after about {m} minutes. It happens on {plat} clients too.",
    "Could you compare this with the incident from the spring? Back then {sym2} and the "
    "root cause turned out to be {cause2}.",
)  # fmt: skip
_ASSISTANT_PARAGRAPHS = (
    "The pattern you describe ({sym}) usually points at {cause}. I would confirm it before "
    "changing anything: look at the {comp} metrics for the minutes before the first error, "
    "and compare them with a quiet day.",
    "A safe first step is to {fix_verb}. It is cheap to roll back, it removes the most "
    "likely cause, and it gives you a clean baseline for the next measurement.",
    "On the decision itself: to {decision} is reasonable {reason}. The cost is mostly in "
    "migration work for the {team} team, so plan it as expand and contract steps rather "
    "than one big change.",
    "If the problem persists after that, the next suspect is {cause2}. That one shows up "
    "as {sym2}, and {tech} has a setting for it that is easy to miss in the {comp}.",
    "For the write-up, I would keep three things: what users felt ({sym}), what caused it "
    "({cause}), and the change that fixed it (we {fix}). Link the dashboards and the "
    "runbook for the {svc} so the next on-call engineer finds them.",
    "Here is a sketch of the check I mean:\n\n```sql\nSELECT count(*), max(created_at)\n"
    "FROM {table}\nWHERE created_at > now() - interval '{m} minutes';\n```\n\nRun it "
    "during the next spike; if the count keeps climbing while the {comp} is idle, it is "
    "not the database.",
    "To summarise the options: (1) {fix_verb} now, (2) move the {svc} to {tech} behind a "
    "feature flag later, (3) leave it and page on symptoms only. I would do the first this "
    "week and revisit the second with {who} next sprint.",
)  # fmt: skip


@dataclass(frozen=True)
class ChatMessage:
    """One message of a long user–assistant conversation."""

    id: str
    content: str
    speaker: str
    minute: int
    """Minutes after the conversation's start."""


def _chat_slots(rng: random.Random) -> dict[str, str]:
    filled = {
        key: _fill(rng, "{" + key + "}")
        for key in ("sym", "cause", "fix", "comp", "tech", "svc", "team", "plat", "m")
    }
    filled["sym2"] = _fill(rng, "{sym}")
    filled["cause2"] = _fill(rng, "{cause}")
    filled["fix_verb"] = filled["fix"]
    filled["who"] = rng.choice(PEOPLE)
    filled["customer"] = rng.choice(CUSTOMERS)
    filled["decision"] = _fill(rng, rng.choice(DECISIONS))
    filled["reason"] = _fill(rng, rng.choice(REASONS))
    filled["table"] = rng.choice(COLUMNS).split(".")[0]
    return filled


def chat_messages(
    n: int, *, seed: int, min_chars: int = 1_500, max_chars: int = 6_000
) -> list[ChatMessage]:
    """``n`` messages of one long conversation, user and assistant in turn, each
    ``User: …`` or ``Assistant: …`` of ``min_chars`` to ``max_chars`` characters
    (several paragraphs on one engineering topic, now and then a code block), as
    long chats with an assistant have them. The same list for the same seed."""
    rng = random.Random(seed)
    out: list[ChatMessage] = []
    minute = 0
    for i in range(n):
        speaker = "user" if i % 2 == 0 else "assistant"
        templates = _USER_PARAGRAPHS if speaker == "user" else _ASSISTANT_PARAGRAPHS
        topic = _chat_slots(rng)
        target = rng.randint(min_chars, max_chars)
        # A reference keeps every message distinct, as the engine stores no repeat.
        parts = [f"{speaker.capitalize()}: ({topic['team'].upper()[:4]}-{seed}-{i})"]
        size = len(parts[0])
        last = ""
        while size < target:
            # Each paragraph its own details, most of them about the message's topic.
            slots = _chat_slots(rng)
            if rng.random() < 0.7:
                slots.update(svc=topic["svc"], who=topic["who"], comp=topic["comp"])
            template = rng.choice([t for t in templates if t != last])
            last = template
            paragraph = template.format(**slots)
            parts.append(paragraph)
            size += len(paragraph) + 2
        content = "\n\n".join(parts)[:max_chars]
        minute += rng.randint(1, 30)
        out.append(ChatMessage(f"chat{seed}-{i:05d}", content, speaker, minute))
    return out


def chat_queries(n: int, *, seed: int) -> list[str]:
    """``n`` questions about a conversation made by :func:`chat_messages`, in its
    vocabulary: some name a person, some ask what one side said."""
    rng = random.Random(seed)
    forms = (
        "what did the assistant suggest for {cause} in the {svc}",
        "when did we see {sym}",
        "what did {who} think caused the {svc} problem",
        "what did I decide about the {comp} in {tech}",
        "how did we fix {cause}",
        "{tech} {comp} settings that are easy to miss",
    )
    return [rng.choice(forms).format(**_chat_slots(rng)) for _ in range(n)]
