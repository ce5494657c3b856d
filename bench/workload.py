"""A mixed REST workload that remembers what the server acknowledged.

Shared by the concurrency and crash tests and the load, crash-loop and soak
benches. Each :class:`Client` (one per thread) sends a random mix of the
routes a running deployment sees: remember, recall, conversation messages,
engagement with what they surfaced, feedback, forget and decay passes. Every
2xx response is written to a shared :class:`Ledger` as the effect it promises
(a memory stored, ``usage_count += 1``, an edge's ``co_occurrences += 1``); a
request that got no answer (the server died under it) goes to the ledger's
"maybe" side, since it may or may not have been applied. :func:`verify` then
reads the server and reports every difference.

What is counted, and why it can be checked exactly from the client:

- ``usage_count`` of a memory: +1 per acknowledged ``helpful`` feedback and per
  acknowledged ``used`` / ``helpful`` engagement with a surfacing of it.
- ``co_occurrences`` of the ABOUT edge from a memory to a feedback context
  concept: +1 per acknowledged helpful feedback naming it. The context names
  (``CONTEXTS``) appear in no memory, query or message, so nothing else
  touches those edges.
- ``co_occurrences`` of the ASSOCIATED edge between two memories: +1 per recall
  that returned both among its top ``CO_RETRIEVED`` results. Bare-retrieval
  learning is batched in the server and written at the latest by the next
  decay pass; a crash may lose the unwritten batch by design, so this one is
  only checked after a clean flush.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

CO_RETRIEVED = 3  # LearningConfig.co_retrieved: a recall's top results that learn together
CONTEXTS = ("zephyrcontext", "quillcontext", "marrowcontext")

_SERVICES = (
    "checkout", "billing", "search", "auth", "notifications", "inventory", "reporting",
    "export worker", "mobile backend", "pricing engine", "webhook dispatcher", "session store",
)  # fmt: skip
_SYMPTOMS = (
    "p99 latency passed two seconds", "requests timed out", "the queue backed up",
    "memory grew until the pods were OOM-killed", "error rates jumped to 12%",
    "webhooks were delivered twice", "users were logged out at random",
    "the nightly job ran for five hours", "dashboards showed stale numbers",
    "deploys hung at the health check",
)  # fmt: skip
_CAUSES = (
    "a missing index", "an N+1 query", "a retry storm without jitter", "an unbounded cache",
    "a daylight-saving bug", "a race between two workers", "a connection leak",
    "a stale DNS entry", "a lock held across a network call", "a forgotten feature flag",
)  # fmt: skip
_FIXES = (
    "added the index", "batched the lookups", "added backoff with jitter", "capped the cache",
    "stored timestamps in UTC", "made the job claim atomic", "closed connections in finally",
    "lowered the DNS TTL", "moved the call outside the lock", "removed the flag",
)  # fmt: skip
_COMBOS = list(itertools.product(_SERVICES, _SYMPTOMS, _CAUSES, _FIXES))
random.Random(2024).shuffle(_COMBOS)
NOTES = len(_COMBOS)
"""How many distinct notes :func:`note` can write."""


@dataclass(frozen=True)
class Note:
    id: str
    content: str
    category: str


def note(i: int, prefix: str = "incident") -> Note:
    """The ``i``-th of :data:`NOTES` distinct incident notes. Any two differ in
    several phrases, so none is taken for a near-duplicate of another."""
    svc, symptom, cause, fix = _COMBOS[i % NOTES]
    return Note(
        id=f"{prefix}-{i:05d}",
        content=f"Incident in the {svc} service: {symptom}. The cause was {cause}; "
        f"the on-call engineer {fix} and wrote a regression test.",
        category=("bug_fix", "outcome", "insight")[i % 3],
    )


def notes(n: int, prefix: str = "incident") -> list[Note]:
    """The first ``n`` notes."""
    return [note(i, prefix) for i in range(n)]


def queries(rng: random.Random) -> str:
    """A recall query in the notes' vocabulary."""
    svc, symptom, cause, fix = rng.choice(_COMBOS)
    return rng.choice(
        (
            f"{svc} {symptom}",
            f"how did we fix {cause} in {svc}",
            f"{symptom} after {cause}",
            f"who {fix}",
        )
    )


def conversation_text(rng: random.Random, turn: int) -> str:
    """A debugging conversation's ``turn``-th message."""
    svc, symptom, cause, _ = rng.choice(_COMBOS)
    return (
        f"the {svc} service is failing: {symptom}",
        f"the {svc} logs point at {cause}",
        f"{symptom} again, and restarting {svc} did not help",
        f"could it be {cause}? the {svc} dashboards say {symptom}",
    )[turn % 4]


# -- what the server acknowledged ---------------------------------------------------


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


@dataclass
class Ledger:
    """Acknowledged effects (and effects of requests left unanswered), shared by
    every client. All access under ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    memories: dict[str, str] = field(default_factory=dict)  # id -> content, acknowledged
    maybe_memories: dict[str, str] = field(default_factory=dict)
    forgotten: set[str] = field(default_factory=set)
    forgetting: set[str] = field(default_factory=set)  # asked to forget, answered or not
    maybe_forgotten: dict[str, str] = field(default_factory=dict)  # id -> content
    usage: Counter[str] = field(default_factory=Counter)
    maybe_usage: Counter[str] = field(default_factory=Counter)
    about: Counter[tuple[str, str]] = field(default_factory=Counter)
    maybe_about: Counter[tuple[str, str]] = field(default_factory=Counter)
    # ASSOCIATED co-occurrences: exact counts (co-use acknowledged, recalls of pairs
    # linked before they were sent), and what may have counted besides.
    pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    maybe_pairs: Counter[tuple[str, str]] = field(default_factory=Counter)
    linked: set[tuple[str, str]] = field(default_factory=set)  # an edge is acknowledged
    unlinked_recalls: Counter[tuple[str, str]] = field(default_factory=Counter)
    uses: int = 0  # used or helpful engagements acknowledged (they may link insights)
    surfacings: list[tuple[str, str]] = field(default_factory=list)  # (surfacing, memory)
    created_ids: list[str] = field(default_factory=list)  # every id a 201 returned
    scratch: list[str] = field(default_factory=list)  # remembered by clients, oldest first
    errors: list[str] = field(default_factory=list)
    acknowledged: int = 0  # acknowledged writes of any kind
    in_flight: int = 0  # requests sent and not answered yet

    def error(self, message: str) -> None:
        with self.lock:
            if len(self.errors) < 100:
                self.errors.append(message)


@dataclass
class Latencies:
    """Per route: response times (ms) of answered requests, and failures; and
    ``failures``, every failure so far in words (its status, or its transport
    error and after how long)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ms: dict[str, list[float]] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def add(self, route: str, ms: float) -> None:
        with self.lock:
            self.ms.setdefault(route, []).append(ms)

    def fail(self, route: str, what: str) -> None:
        with self.lock:
            self.failed[route] += 1
            self.failures.append(f"{route}: {what}")

    def take(self) -> tuple[dict[str, list[float]], Counter[str]]:
        """What was recorded since the last take, and start afresh."""
        with self.lock:
            ms, failed = self.ms, self.failed
            self.ms, self.failed = {}, Counter()
        return ms, failed


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0-1) of ``values``, nearest rank; 0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


# -- the client -----------------------------------------------------------------------

ROUTES = ("remember", "recall", "message", "engage", "feedback", "use", "forget", "decay")


@dataclass(frozen=True)
class Mix:
    """Relative weights of the routes; ``scratch_cap`` bounds how many memories the
    clients remember between them (the ledger's ``scratch``) before a remember
    forgets the oldest instead (0: never forget). Shared, so that every number of
    clients runs the same mix once the pool is full: a cap per client would
    leave sixteen clients remembering for long after one client had started
    forgetting."""

    remember: float = 10
    recall: float = 40
    message: float = 20
    engage: float = 10
    feedback: float = 15
    use: float = 5
    decay: float = 1
    scratch_cap: int = 0

    def pick(self, rng: random.Random) -> str:
        routes = ("remember", "recall", "message", "engage", "feedback", "use", "decay")
        weights = [getattr(self, r) for r in routes]
        return rng.choices(routes, weights)[0]


class _NoAnswer(Exception):
    """The request was sent and no response came back."""


class _Refused(Exception):
    """No connection could be made: the request was never sent."""


class Client:
    """One thread's share of the workload, against ``collection`` on ``url``.

    Args:
        hot: memories (all in the ledger) that feedback goes to: a few, so that
            concurrent clients update the same ones.
        next_note: hands out note numbers no other client uses.
    """

    def __init__(
        self,
        url: str,
        collection: str,
        ledger: Ledger,
        latencies: Latencies,
        *,
        name: str,
        seed: int,
        hot: Sequence[str],
        next_note: Callable[[], int],
        mix: Mix = Mix(),
        timeout_s: float = 30.0,
    ) -> None:
        self.http = httpx.Client(base_url=url, timeout=timeout_s)
        self.base = f"/v1/collections/{collection}"
        self.ledger = ledger
        self.latencies = latencies
        self.name = name
        self.rng = random.Random(seed)
        self.hot = list(hot)
        self.next_note = next_note
        self.mix = mix
        self.conversations = itertools.count()
        self.conversation = ""
        self.turn = 0
        self.clock = datetime.now(UTC)
        self._new_conversation()

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def step(self) -> str:
        """Send one request of the mix; returns its route."""
        route = self.mix.pick(self.rng)
        if route == "remember" and self.mix.scratch_cap:
            with self.ledger.lock:
                full = len(self.ledger.scratch) >= self.mix.scratch_cap
            if full:
                route = "forget"
        if route == "engage" and not self._has_surfacing():
            route = "recall"
        try:
            getattr(self, route)()
        except _Refused:
            return "refused"
        return route

    # Each route: send, time, and on a 2xx write its effect to the ledger.

    def _send(self, route: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        started = time.perf_counter()
        with self.ledger.lock:
            self.ledger.in_flight += 1
        try:
            r = self.http.request(method, path, **kwargs)
        except httpx.ConnectError as e:
            raise _Refused(route) from e
        except httpx.TransportError as e:
            waited = time.perf_counter() - started
            self.latencies.fail(route, f"{type(e).__name__} after {waited:.1f} s")
            raise _NoAnswer(route) from e
        finally:
            with self.ledger.lock:
                self.ledger.in_flight -= 1
        self.latencies.add(route, (time.perf_counter() - started) * 1000.0)
        if r.status_code >= 500:
            self.latencies.fail(route, f"{r.status_code} {r.text[:200]}")
        return r

    def _unexpected(self, route: str, r: httpx.Response) -> None:
        self.ledger.error(f"{self.name} {route}: {r.status_code} {r.text[:200]}")

    def remember(self) -> None:
        item = note(self.next_note(), prefix=f"{self.name}")
        body = {"id": item.id, "content": item.content, "category": item.category}
        try:
            r = self._send("remember", "POST", f"{self.base}/memories", json=body)
        except _NoAnswer:
            with self.ledger.lock:
                self.ledger.maybe_memories[item.id] = item.content
            return
        if r.status_code != 201 or not r.json()["created"]:
            self._unexpected("remember", r)
            return
        with self.ledger.lock:
            self.ledger.memories[item.id] = item.content
            self.ledger.created_ids.append(r.json()["id"])
            self.ledger.acknowledged += 1
            self.ledger.scratch.append(item.id)

    def forget(self) -> None:
        with self.ledger.lock:
            if not self.ledger.scratch:
                return
            memory_id = self.ledger.scratch.pop(0)
            self.ledger.forgetting.add(memory_id)
        try:
            r = self._send("forget", "DELETE", f"{self.base}/memories/{memory_id}")
        except _NoAnswer:
            with self.ledger.lock:
                content = self.ledger.memories.pop(memory_id, None)
                if content is not None:
                    self.ledger.maybe_forgotten[memory_id] = content
            return
        if r.status_code != 204:
            self._unexpected("forget", r)
            return
        with self.ledger.lock:
            self.ledger.memories.pop(memory_id, None)
            self.ledger.usage.pop(memory_id, None)
            self.ledger.maybe_usage.pop(memory_id, None)
            self.ledger.forgotten.add(memory_id)
            self.ledger.acknowledged += 1

    def recall(self) -> None:
        body = {"query": queries(self.rng), "limit": 5}
        with self.ledger.lock:
            linked_before = set(self.ledger.linked)
        try:
            r = self._send("recall", "POST", f"{self.base}/recall", json=body)
        except _NoAnswer:
            return
        if r.status_code != 200:
            self._unexpected("recall", r)
            return
        top = [hit["id"] for hit in r.json()["results"][:CO_RETRIEVED]]
        # A bare recall counts only on an ASSOCIATED edge that exists when its
        # learning is written (batched, later): exact for pairs linked before it
        # was sent; a pair linked since may or may not have counted it.
        with self.ledger.lock:
            for a, b in itertools.combinations(dict.fromkeys(top), 2):
                pair = _pair(a, b)
                if pair in linked_before:
                    self.ledger.pairs[pair] += 1
                elif pair in self.ledger.linked:
                    self.ledger.maybe_pairs[pair] += 1
                else:
                    self.ledger.unlinked_recalls[pair] += 1

    def use(self) -> None:
        """Two memories used together: their ASSOCIATED edge is created or
        strengthened, and counts one co-occurrence."""
        with self.ledger.lock:
            known = sorted(self.ledger.memories.keys() - self.ledger.forgetting)
        if len(known) < 2:
            return
        a, b = self.rng.sample(known[:50] if self.rng.random() < 0.5 else known, 2)
        pair = _pair(a, b)
        context = self.rng.choice(CONTEXTS)
        body = {"ids": [a, b], "context": [context]}
        try:
            r = self._send("use", "POST", f"{self.base}/memories/used-together", json=body)
        except _NoAnswer:
            with self.ledger.lock:
                self.ledger.maybe_pairs[pair] += 1 + self.ledger.unlinked_recalls.pop(pair, 0)
                self.ledger.maybe_about[(a, context)] += 1
                self.ledger.maybe_about[(b, context)] += 1
            return
        if r.status_code == 404:
            with self.ledger.lock:
                if a in self.ledger.forgetting or b in self.ledger.forgetting:
                    return
        if r.status_code != 200:
            self._unexpected("use", r)
            return
        with self.ledger.lock:
            self.ledger.pairs[pair] += 1
            # Their edges to the context's concept are strengthened too.
            self.ledger.about[(a, context)] += 1
            self.ledger.about[(b, context)] += 1
            # Recalls of the pair before it was linked whose learning was not yet
            # written may count on the new edge.
            self.ledger.maybe_pairs[pair] += self.ledger.unlinked_recalls.pop(pair, 0)
            self.ledger.linked.add(pair)
            self.ledger.acknowledged += 1

    def _new_conversation(self) -> None:
        self.conversation = f"{self.name}-chat-{next(self.conversations)}"
        self.turn = 0
        self.clock = datetime.now(UTC)

    def message(self) -> None:
        if self.turn >= 6:
            self._new_conversation()
        # Two minutes apart: a calm conversation, below the momentum gate.
        at = self.clock + timedelta(minutes=2 * self.turn)
        body = {"text": conversation_text(self.rng, self.turn), "at": at.isoformat()}
        self.turn += 1
        path = f"{self.base}/conversations/{self.conversation}/messages"
        try:
            r = self._send("message", "POST", path, json=body)
        except _NoAnswer:
            return
        if r.status_code != 200:
            self._unexpected("message", r)
            return
        offered = [(i["surfacing_id"], i["memory"]["id"]) for i in r.json()["insights"]]
        with self.ledger.lock:
            self.ledger.surfacings.extend(offered)
            self.ledger.acknowledged += 1

    def _has_surfacing(self) -> bool:
        with self.ledger.lock:
            return bool(self.ledger.surfacings)

    def engage(self) -> None:
        with self.ledger.lock:
            if not self.ledger.surfacings:
                return
            # Any client may engage any surfacing, once: popped under the lock.
            surfacing, memory_id = self.ledger.surfacings.pop(
                self.rng.randrange(len(self.ledger.surfacings))
            )
        engagement = self.rng.choice(("used", "helpful", "ignored"))
        counts = engagement != "ignored"
        path = f"{self.base}/surfacings/{surfacing}/engagement"
        try:
            r = self._send("engage", "POST", path, json={"engagement": engagement})
        except _NoAnswer:
            if counts:
                with self.ledger.lock:
                    self.ledger.maybe_usage[memory_id] += 1
            return
        if r.status_code == 404:
            with self.ledger.lock:
                gone = (
                    memory_id in self.ledger.forgotten
                    or memory_id in self.ledger.maybe_forgotten
                    or memory_id in self.ledger.forgetting
                )
            if gone:
                return
        if r.status_code != 200:
            self._unexpected("engage", r)
            return
        with self.ledger.lock:
            if counts:
                self.ledger.usage[memory_id] += 1
                self.ledger.uses += 1
            self.ledger.acknowledged += 1

    def feedback(self) -> None:
        memory_id = self.rng.choice(self.hot)
        context = self.rng.choice(CONTEXTS)
        path = f"{self.base}/memories/{memory_id}/feedback"
        try:
            r = self._send("feedback", "POST", path, json={"helpful": True, "context": [context]})
        except _NoAnswer:
            with self.ledger.lock:
                self.ledger.maybe_usage[memory_id] += 1
                self.ledger.maybe_about[(memory_id, context)] += 1
            return
        if r.status_code != 200:
            self._unexpected("feedback", r)
            return
        with self.ledger.lock:
            self.ledger.usage[memory_id] += 1
            self.ledger.about[(memory_id, context)] += 1
            self.ledger.acknowledged += 1

    def decay(self) -> None:
        try:
            r = self._send("decay", "POST", f"{self.base}/maintenance/decay")
        except _NoAnswer:
            return
        if r.status_code != 200:
            self._unexpected("decay", r)


@dataclass
class Crew:
    """Client threads stepping through the workload (see :func:`start_crew`)."""

    threads: list[threading.Thread]
    crashed: list[BaseException]

    def join(self, timeout: float | None = None) -> list[str]:
        """Wait for every client; the names of those still running after ``timeout``."""
        for t in self.threads:
            t.join(timeout=timeout)
        return [t.name for t in self.threads if t.is_alive()]


def start_crew(
    count: int,
    client: Callable[[int], Client],
    *,
    go_on: Callable[[], bool] = lambda: True,
    steps: int | None = None,
    on_crash: Callable[[], None] | None = None,
) -> Crew:
    """Start ``count`` threads, the ``n``-th stepping ``client(n)`` while ``go_on()``
    holds (and at most ``steps`` times). An exception ends that client; it is kept
    in :attr:`Crew.crashed` and ``on_crash`` is called."""
    crashed: list[BaseException] = []

    def work(n: int) -> None:
        try:
            with client(n) as c:
                taken = 0
                while go_on() and (steps is None or taken < steps):
                    c.step()
                    taken += 1
        except BaseException as e:
            crashed.append(e)
            if on_crash is not None:
                on_crash()

    threads = [
        threading.Thread(target=work, args=(n,), name=f"client{n}", daemon=True)
        for n in range(count)
    ]
    for t in threads:
        t.start()
    return Crew(threads, crashed)


def counter(start: int = 0) -> Callable[[], int]:
    """A thread-safe source of ``start``, ``start + 1``, …"""
    lock = threading.Lock()
    numbers = itertools.count(start)

    def take() -> int:
        with lock:
            return next(numbers)

    return take


def preload(url: str, collection: str, items: Sequence[Note], ledger: Ledger) -> None:
    """Remember ``items`` in batches and put them in the ledger.

    Raises:
        RuntimeError: a batch was not stored whole.
    """
    with httpx.Client(base_url=url, timeout=120.0) as http:
        for start in range(0, len(items), 100):
            batch = items[start : start + 100]
            body = {
                "memories": [
                    {"id": m.id, "content": m.content, "category": m.category} for m in batch
                ]
            }
            r = http.post(f"/v1/collections/{collection}/memories", json=body)
            if r.status_code != 201 or not all(x["created"] for x in r.json()["results"]):
                raise RuntimeError(f"preloading failed: {r.status_code} {r.text[:300]}")
            with ledger.lock:
                ledger.memories.update((m.id, m.content) for m in batch)
                ledger.created_ids.extend(x["id"] for x in r.json()["results"])


# -- checking the server against the ledger ----------------------------------------------


@dataclass
class Verdict:
    """What :func:`verify` found. ``lost``: acknowledged effects missing (memories
    gone, forgets undone, counter increments short); ``problems``: every
    difference, the losses included, one line each."""

    problems: list[str]
    lost: int


def _read(url: str, base: str, ids: Sequence[str]) -> dict[str, tuple[int, dict[str, Any] | None]]:
    out: dict[str, tuple[int, dict[str, Any] | None]] = {}
    with httpx.Client(base_url=url, timeout=60.0) as http:
        for memory_id in ids:
            r = http.get(f"{base}/memories/{memory_id}")
            out[memory_id] = (r.status_code, r.json() if r.status_code == 200 else None)
    return out


def _edges(url: str, base: str, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    with httpx.Client(base_url=url, timeout=60.0) as http:
        for memory_id in ids:
            params = {"center": memory_id, "depth": 1, "max_nodes": 2000}
            r = http.get(f"{base}/graph", params=params)
            r.raise_for_status()
            out[memory_id] = r.json()["edges"]
    return out


def _co(edges: list[dict[str, Any]], kind: str, source: str, target: str) -> int:
    """co_occurrences of the edge (0 when absent); ASSOCIATED either way round.
    ``/graph`` names edge ends by node id (``Memory:<id>``, ``Concept:<name>``)."""
    hub = {"ABOUT": "Concept", "HAS_TRIGGER": "Trigger", "IN_DOMAIN": "Domain"}
    want = (f"Memory:{source}", f"{hub.get(kind, 'Memory')}:{target}")
    for e in edges:
        if e["type"] != kind:
            continue
        if (e["source"], e["target"]) == want or (
            kind == "ASSOCIATED" and (e["target"], e["source"]) == want
        ):
            return int(e["co_occurrences"])
    return 0


def verify(
    url: str,
    collection: str,
    ledger: Ledger,
    *,
    pairs: bool,
    settle: bool = False,
    threads: int = 4,
) -> Verdict:
    """Every difference between what the server holds and what it acknowledged.

    Each acknowledged memory is there with its content, each acknowledged forget
    is gone, no id was created twice, the memory count is within what may have
    happened, and each counter is at least what was acknowledged and at most
    that plus what was left unanswered. ``pairs`` checks the ASSOCIATED edges'
    co-occurrences too (exact only after the server wrote its batched learning:
    a decay pass). ``settle`` then takes the server's word for what unanswered
    requests did, so the next check is exact again.
    """
    problems: list[str] = []
    lost = 0
    base = f"/v1/collections/{collection}"
    with ledger.lock:
        memories = dict(ledger.memories)
        maybe_memories = dict(ledger.maybe_memories)
        forgotten = set(ledger.forgotten) - ledger.maybe_memories.keys()
        maybe_forgotten = dict(ledger.maybe_forgotten)
        usage, maybe_usage = Counter(ledger.usage), Counter(ledger.maybe_usage)
        about, maybe_about = Counter(ledger.about), Counter(ledger.maybe_about)
        expected_pairs = Counter(ledger.pairs)
        maybe_pairs = Counter(ledger.maybe_pairs)
        # Insights used in one conversation are linked too: each used engagement
        # may add one co-occurrence to a pair.
        uses = ledger.uses
        created = list(ledger.created_ids)

    duplicated = [i for i, n in Counter(created).items() if n > 1]
    if duplicated:
        problems.append(f"{len(duplicated)} ids created twice, e.g. {duplicated[:3]}")

    def within(what: str, actual: int, low: int, extra: int) -> int:
        """Note a value outside [low, low + extra]; returns how far short it fell."""
        if not low <= actual <= low + extra:
            span = f"{low}" if not extra else f"{low}..{low + extra}"
            problems.append(f"{what}: {actual}, expected {span}")
        return max(0, low - actual)

    with httpx.Client(base_url=url, timeout=120.0) as http:
        r = http.get(f"{base}/stats", params={"graph": "false"})
        r.raise_for_status()
        within(
            "memories",
            r.json()["memories"],
            len(memories),
            len(maybe_memories) + len(maybe_forgotten),
        )

    wanted = sorted(memories.keys() | forgotten | maybe_memories.keys() | maybe_forgotten.keys())
    centers = sorted(
        {m for m, _ in about.keys() | maybe_about.keys()}
        | ({a for a, _ in expected_pairs} if pairs else set())
    )
    centers = [c for c in centers if c in memories]
    with ThreadPoolExecutor(threads) as pool:
        found: dict[str, tuple[int, dict[str, Any] | None]] = {}
        for part in pool.map(lambda ids: _read(url, base, ids), _split(wanted, threads)):
            found.update(part)
        graphs: dict[str, list[dict[str, Any]]] = {}
        for edges in pool.map(lambda ids: _edges(url, base, ids), _split(centers, threads)):
            graphs.update(edges)

    missing = []
    for memory_id in sorted(memories):
        status, body = found[memory_id]
        if status != 200 or body is None or body["content"] != memories[memory_id]:
            missing.append(f"{memory_id}: {status}")
            continue
        lost += within(
            f"usage_count of {memory_id}",
            body["retrieval"]["usage_count"],
            usage[memory_id],
            maybe_usage[memory_id],
        )
    if missing:
        problems.append(f"{len(missing)} acknowledged memories lost, e.g. {missing[:5]}")
        lost += len(missing)
    undone = sorted(m for m in forgotten if found[m][0] != 404)
    if undone:
        problems.append(f"{len(undone)} acknowledged forgets undone, e.g. {undone[:5]}")
        lost += len(undone)

    for memory_id, context in sorted(about.keys() | maybe_about.keys()):
        if memory_id in memories:
            lost += within(
                f"co_occurrences of {memory_id} ABOUT {context}",
                _co(graphs[memory_id], "ABOUT", memory_id, context),
                about[(memory_id, context)],
                maybe_about[(memory_id, context)],
            )
    if pairs:
        for (a, b), count in sorted(expected_pairs.items()):
            if a in memories and b in memories:
                lost += within(
                    f"co_occurrences of {a} ASSOCIATED {b}",
                    _co(graphs[a], "ASSOCIATED", a, b),
                    count,
                    maybe_pairs[(a, b)] + uses,
                )

    if settle:
        with ledger.lock:
            for memory_id, content in {**maybe_memories, **maybe_forgotten}.items():
                if found[memory_id][0] == 200:
                    ledger.memories[memory_id] = content
                else:
                    ledger.forgotten.add(memory_id)
                ledger.maybe_memories.pop(memory_id, None)
                ledger.maybe_forgotten.pop(memory_id, None)
            for memory_id in maybe_usage:
                body = found.get(memory_id, (0, None))[1]
                if body is not None:
                    ledger.usage[memory_id] = body["retrieval"]["usage_count"]
            for memory_id, context in maybe_about:
                if memory_id in graphs:
                    co = _co(graphs[memory_id], "ABOUT", memory_id, context)
                    ledger.about[(memory_id, context)] = co
            ledger.maybe_usage.clear()
            ledger.maybe_about.clear()
    return Verdict(problems, lost)


def _split(items: Sequence[str], parts: int) -> list[Sequence[str]]:
    return [items[i::parts] for i in range(parts)]
