"""A small, realistic memory set for trying the engine (``hippo demo``).

What an engineering team learns over a few months on a payments-heavy web
product: bug fixes, decisions, patterns, incidents, customer insights. The ids
are fixed, so loading the set twice stores nothing new (identical content is
recognized as a duplicate).
"""

from __future__ import annotations

from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus, RememberOutcome


def _m(memory_id: str, category: str, tags: tuple[str, ...], content: str) -> NewMemory:
    return NewMemory(
        id=f"demo-{memory_id}", category=category, tags=list(tags), content=content, source="demo"
    )


DEMO_MEMORIES: tuple[NewMemory, ...] = (
    _m("checkout-n-plus-one", "bug_fix", ("checkout", "postgres", "performance"),
       "Checkout page took 4 seconds for carts with many items. The ORM issued one query per "
       "line item to load prices (an N+1). Fixed by prefetching prices in a single query; p95 "
       "dropped to 350 ms."),
    _m("retry-jitter", "pattern", ("resilience", "http"),
       "When calling a flaky downstream service, retry with exponential backoff and full "
       "jitter, and cap the total time with a deadline. Plain fixed-interval retries "
       "synchronize clients and turn a brief blip into a retry storm."),
    _m("webhook-duplicates", "bug_fix", ("webhooks", "payments", "idempotency"),
       "Customers were charged twice because the payment provider redelivered webhooks after "
       "our endpoint answered slowly. We now store the event id with a unique constraint and "
       "ignore repeats, and we acknowledge the webhook before doing slow work."),
    _m("money-minor-units", "decision", ("payments", "data-model"),
       "Decision: store money as integer minor units (cents) together with an ISO currency "
       "code, never as floats. Rounding errors in float arithmetic caused invoice totals to "
       "be off by one cent in about 0.3% of invoices."),
    _m("migrations-expand-contract", "pattern", ("database", "deploy"),
       "Schema changes follow expand and contract: add the new column or table, deploy code "
       "that writes both, backfill, switch reads, and only then drop the old column in a later "
       "release. Renaming a column in one step broke the rolling deploy in March."),
    _m("pool-exhaustion", "outcome", ("incident", "postgres", "api"),
       "Incident: the API returned 500s for 25 minutes because the Postgres connection pool "
       "was exhausted. A report endpoint held connections while streaming large CSV files. "
       "Fix: stream from a separate read replica pool and set a statement timeout."),
    _m("dst-report-bug", "bug_fix", ("reports", "timezones"),
       "Daily revenue reports double-counted one hour on the day daylight saving time ended. "
       "Bucketing used local wall-clock time. We now store timestamps in UTC and convert to "
       "the account's timezone only when rendering."),
    _m("flaky-tests-shared-state", "insight", ("testing", "ci"),
       "Most flaky tests in the API suite came from shared state: a module-level cache and "
       "tests that depended on execution order. Giving every test its own database schema "
       "and clearing caches in a fixture removed 90% of the flakes."),
    _m("feature-flags-cleanup", "decision", ("feature-flags", "process"),
       "Decision: every feature flag gets an owner and an expiry date when it is created. A "
       "weekly job lists expired flags in the team channel. Stale flags had caused a "
       "production bug when an old code path was accidentally re-enabled."),
    _m("redis-eviction", "outcome", ("incident", "redis", "sessions"),
       "Incident: users were logged out at random because Redis hit its memory limit and the "
       "allkeys-lru policy evicted session keys along with cache entries. Sessions now live "
       "in a separate Redis instance with noeviction."),
    _m("api-versioning", "decision", ("api", "compatibility"),
       "Decision: the public REST API is versioned in the URL path (/v1, /v2). Breaking "
       "changes need a new version and at least six months of overlap; additive changes "
       "(new optional fields) ship without a version bump."),
    _m("idempotent-jobs", "pattern", ("background-jobs", "reliability"),
       "Background jobs must be safe to run twice: workers can crash after finishing the work "
       "but before acknowledging the message. Use idempotency keys or upserts, and never "
       "send an email or charge a card without checking a record first."),
    _m("mobile-token-refresh", "bug_fix", ("mobile", "auth"),
       "The iOS app logged users out when two requests refreshed an expired access token at "
       "the same time; the second refresh invalidated the first token. Fixed by serializing "
       "token refresh behind a single in-flight promise in the client."),
    _m("search-reindex", "outcome", ("incident", "elasticsearch", "search"),
       "Incident: half of the product search results disappeared for an hour after a reindex. "
       "The alias was switched before the new index finished building. The reindex script "
       "now checks document counts before swapping the alias."),
    _m("dns-failover", "insight", ("infrastructure", "dns"),
       "After a database failover, some services kept connecting to the old primary for 20 "
       "minutes because the JVM cached DNS results indefinitely. Set networkaddress.cache.ttl "
       "to 30 seconds on every Java service."),
    _m("rate-limit-public-api", "decision", ("api", "rate-limiting"),
       "Decision: the public API uses a token bucket rate limit per API key (100 requests per "
       "second, burst 200), enforced at the gateway. Limits answer 429 with a Retry-After "
       "header so well-behaved clients can back off."),
    _m("lock-network-call", "bug_fix", ("concurrency", "performance"),
       "Throughput of the order service collapsed under load because a mutex was held across "
       "an HTTP call to the inventory service. Moving the call outside the critical section "
       "raised throughput from 80 to 900 orders per minute."),
    _m("csv-export-memory", "bug_fix", ("exports", "memory"),
       "Large CSV exports crashed workers with out-of-memory errors because the whole result "
       "set was loaded into a list. The export now streams rows with a server-side cursor and "
       "writes them in chunks of 5,000."),
    _m("postmortem-template", "documentation", ("process", "incidents"),
       "Postmortems are blameless and use the same template: timeline, impact in customer "
       "terms, contributing factors, what went well, and action items with owners and due "
       "dates. They are reviewed in the Thursday ops meeting."),
    _m("canary-deploys", "pattern", ("deploy", "kubernetes"),
       "Deploy risky changes as a canary: route 5% of traffic to the new version for 15 "
       "minutes and compare error rate and p99 latency with the stable pods before promoting. "
       "Roll back first, debug later."),
    _m("enterprise-sso", "insight", ("customers", "auth", "enterprise"),
       "Enterprise customers repeatedly ask for SAML single sign-on and SCIM provisioning "
       "during procurement; three deals stalled on it last quarter. SSO is now on the roadmap "
       "as a paid add-on."),
    _m("regex-dos", "bug_fix", ("security", "input-validation"),
       "An email validation regex with nested quantifiers took minutes on crafted input and "
       "pinned a CPU (ReDoS). Replaced it with a simple length check plus a linear-time "
       "parser, and added a fuzz test."),
    _m("cache-stampede", "pattern", ("caching", "performance"),
       "To avoid a cache stampede when a hot key expires, refresh it early with probabilistic "
       "early expiration or let a single request rebuild it behind a lock while others get "
       "the stale value."),
    _m("slow-query-log", "insight", ("postgres", "observability"),
       "Turning on log_min_duration_statement at 200 ms and reviewing the slow query log "
       "weekly found more performance problems than any profiler: missing indexes on foreign "
       "keys were the most common cause."),
    _m("stripe-api-upgrade", "work_item", ("payments", "stripe"),
       "Upgrade the Stripe API version from 2022-11 to the current version. Payment intents "
       "changed their error codes; update the mapping in the payments gateway and run the "
       "full checkout test suite against test mode."),
    _m("k8s-probes", "bug_fix", ("kubernetes", "deploy"),
       "Deploys hung because the liveness probe hit an endpoint that checked the database; "
       "during a brief database slowdown Kubernetes restarted every pod at once. Liveness now "
       "only checks the process; readiness checks dependencies."),
    _m("monolith-first", "decision", ("architecture",),
       "Decision: keep billing as a module inside the monolith instead of a separate "
       "microservice until the team has more than 15 engineers. The network boundary would "
       "add failure modes without a team that needs the independence."),
    _m("on-call-alerts", "decision", ("on-call", "observability"),
       "Decision: page only on symptoms that users feel (error rate, latency, failed "
       "checkouts), not on causes like CPU usage. Cause-based alerts go to a ticket queue. "
       "Pages per week dropped from 30 to 4."),
    _m("timeout-budget", "pattern", ("resilience", "http"),
       "Every outgoing request gets a timeout shorter than the caller's remaining budget. A "
       "default client timeout of 60 seconds let one slow dependency tie up every worker "
       "thread of the API."),
    _m("android-webview-crash", "bug_fix", ("mobile", "android"),
       "The Android app crashed on startup on devices with an outdated system WebView. We now "
       "check the WebView version and show an update prompt instead of loading the embedded "
       "help pages."),
    _m("churn-onboarding", "insight", ("customers", "growth"),
       "Accounts that connect a payment method during their first session churn half as "
       "often. The onboarding checklist now puts that step first, and support reaches out to "
       "accounts that skip it."),
    _m("secret-rotation", "documentation", ("security", "secrets"),
       "Secrets live in the vault, never in environment files committed to git. Rotation "
       "runbook: create the new secret, deploy readers that accept both, switch writers, then "
       "revoke the old secret after 24 hours."),
    _m("sql-injection-report", "outcome", ("security", "incident"),
       "A security researcher reported SQL injection in the legacy admin search, which built "
       "a query with string formatting. Fixed with parameterized queries within a day; an "
       "audit found no exploitation in the logs."),
    _m("load-test-black-friday", "outcome", ("performance", "capacity"),
       "The load test before Black Friday showed checkout saturating at 1,200 requests per "
       "second, limited by the payment provider's sandbox, not our code. We agreed a higher "
       "production limit with the provider in advance."),
    _m("graphql-depth-limit", "code_snippet", ("api", "graphql", "security"),
       "Limit GraphQL query depth and cost to stop abusive nested queries: "
       "validation_rules=[depth_limit_validator(max_depth=8), cost_validator(max_cost=5000)] "
       "is set on the schema for every public endpoint."),
    _m("kafka-consumer-lag", "bug_fix", ("kafka", "performance"),
       "Consumer lag on the events topic grew to millions of messages because each message "
       "was committed synchronously. Committing offsets in batches every second and raising "
       "max.poll.records cleared the backlog in an hour."),
)  # fmt: skip
"""The demo memories; ids start with ``demo-``."""

DEMO_QUERIES: tuple[str, ...] = (
    "customers were charged twice",
    "how should we change the database schema without downtime",
    "why is checkout slow",
    "users keep getting logged out",
    "what to do when a downstream service is unreliable",
    "what broke in March",
)
"""Questions ``hippo demo`` asks after loading the memories."""


def load_demo(service: Hippocampus, collection: str) -> list[RememberOutcome]:
    """Remember the demo memories in ``collection``. Safe to run again: memories
    already there are reported as duplicates, not stored twice."""
    return service.remember_many(collection, list(DEMO_MEMORIES))


__all__ = ["DEMO_MEMORIES", "DEMO_QUERIES", "load_demo"]
