"""Recall latency at scale, against a bare numpy brute-force top-k.

    .venv/bin/python bench/recall.py --n 100000 [--queries 200] [--vectors hashing|minilm] [--json]
    .venv/bin/python bench/recall.py --store neo4j --n 20000
    .venv/bin/python bench/recall.py --store both --n 100000   # embedded, then Neo4j
    .venv/bin/python bench/recall.py --long [--long-collections 10] [--long-memories 1400]

Builds a store with N synthetic memories: the embedded store (default) in a
temporary directory, or with ``--store neo4j`` a collection of its own in the
Neo4j that ``HIPPO_NEO4J__URI``, ``__USER``, ``__PASSWORD`` and ``__DATABASE``
name (as ``hippo serve`` reads them; the schema is set up first), dropped
afterwards. The same table comes out for both, so the stores compare side by
side. To keep the build short,
memory vectors are precomputed and cached under ``.bench-cache/`` (hashing
vectors by default; ``--vectors minilm`` embeds with the real model once, which
takes long on a small CPU, then reuses the cache), hub edges come from the cheap
keyword extractor, and records go to ``store.add_memories`` directly. Recall
itself runs as in production, spaCy extraction of the query included. Query
vectors are embedded once, before timing, by the same embedder as the memories
(so the rankings mean something).

Timed per query: ``service.recall(collection, query, limit=10, query_vector=qv)``
(embedding excluded), after a warm-up on other questions that lasts until
recall stops getting faster (:func:`warm_up`), and in the same run ``M @ q`` +
``argpartition`` + sort of the top k over the same N×d float32 matrix.

On Neo4j the table also gives the build's rate (memories/s through
``add_memories``), the database hits of one recall (every statement it runs,
``PROFILE``d, median over ``--profile-queries`` queries), and what the server
holds: heap used and its maximum (JMX), the page cache configured, and the
store's size on disk when ``--neo4j-home`` names the server's home (the
database's folder under ``data/databases``): the page cache a server needs to
hold the whole store. ``--keep`` leaves the collection in place.

``--long`` measures recall's tail on long memories instead: ``--long-collections``
collections of ``--long-memories`` long chat messages each (1,500-6,000
characters, user and assistant in turn, one conversation per collection),
remembered through the engine as any long content is (embedded passage by
passage; keyword extraction, to keep the build short). The store is then
reopened and warmed as ``hippo serve`` warms it at start, and ``--queries``
questions, taken in turn from every collection as a served engine gets them,
are timed for DENSE and the default recipe: p50, p95 and their ratio (target:
p95 <= 3x p50).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synth import QUERIES, SynthMemory, chat_messages, chat_queries, memories, queries
from hippocampus.config import HippoSettings
from hippocampus.embed import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from hippocampus.extract import Extraction, KeywordConceptExtractor, SpacyConceptExtractor
from hippocampus.model import (
    Memory,
    NewMemory,
    RecallFilters,
    RetrievalMeta,
    content_hash,
    utcnow,
)
from hippocampus.retrieve import DEFAULT_RECIPE
from hippocampus.service import Hippocampus
from hippocampus.services.hubs import hub_edges
from hippocampus.store import GraphStore, MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.index_ann import APPROXIMATE_FROM
from hippocampus.store.neo4j import Neo4jStore

CACHE = Path(__file__).resolve().parent.parent / ".bench-cache"
CHUNK = 5_000  # rows per cache file: a long MiniLM run can stop and resume
COLLECTION = "bench"
K = 10


def log(message: str) -> None:
    # stderr, so that --json leaves exactly one object on stdout
    print(message, file=sys.stderr, flush=True)


def cached_vectors(embedder: Embedder, items: list[SynthMemory], seed: int) -> np.ndarray:
    """Vectors of ``items``, computed once per (model, seed) in chunks and cached.
    ``memories(n, seed)`` is a prefix of ``memories(m, seed)`` for n < m, so a
    cache made for more memories serves fewer."""
    folder = CACHE / f"{embedder.name}-seed{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    chunks = range(0, len(items), CHUNK)
    missing = [start for start in chunks if not (folder / f"{start:08d}.npy").exists()]
    # Whole chunks are cached, so the texts may run past len(items).
    texts = [m.content for m in memories(chunks[-1] + CHUNK, seed=seed)] if missing else []
    parts: list[np.ndarray] = []
    for start in chunks:
        path = folder / f"{start:08d}.npy"
        if start in missing:
            log(f"  embedding memories {start}-{start + CHUNK} with {embedder.name}, caching them")
            np.save(path, embedder.encode(texts[start : start + CHUNK]).astype(np.float32))
        parts.append(np.load(path))
    return np.vstack(parts)[: len(items)]


def build(
    store: GraphStore,
    items: list[SynthMemory],
    vectors: np.ndarray,
    model: str,
    collection: str = COLLECTION,
    rates: list[float] | None = None,
) -> int:
    """Insert the memories with their vectors and keyword hub edges; returns the
    number of edges. ``rates`` receives the rate (memories/s) of each tenth of the
    build, the store's writes alone (extraction excluded)."""
    extractor = KeywordConceptExtractor(max_concepts=8, max_triggers=4)
    now = utcnow()
    edges_total = 0
    step = 2_000
    tenth = max(1, len(items) // 10)
    written, writing_s = 0, 0.0
    for start in range(0, len(items), step):
        chunk = items[start : start + step]
        extractions = extractor.extract_many([m.content for m in chunk])
        records = []
        for offset, (m, ex) in enumerate(zip(chunk, extractions, strict=True)):
            record = keyword_record(
                m, ex, vectors[start + offset], model=model, now=now, collection=collection
            )
            edges_total += len(record.edges)
            records.append(record)
        t0 = time.perf_counter()
        store.add_memories(collection, records)
        writing_s += time.perf_counter() - t0
        written += len(records)
        if written >= tenth or start + step >= len(items):
            if rates is not None:
                rates.append(written / writing_s)
            written, writing_s = 0, 0.0
    return edges_total


def keyword_record(
    m: SynthMemory,
    ex: Extraction,
    vector: np.ndarray,
    *,
    model: str,
    now: datetime,
    collection: str,
) -> MemoryRecord:
    """A synthetic memory as written, with its vector and its hub edges."""
    memory = Memory(
        id=m.id,
        collection=collection,
        content=m.content,
        category=m.category,
        tags=list(m.tags),
        created_at=now,
        updated_at=now,
        content_hash=content_hash(m.content),
        embedding_model=model,
        retrieval=RetrievalMeta(
            domains=list(ex.domains),
            triggers=list(ex.triggers),
            concepts=list(ex.concepts),
            names=list(ex.names),
        ),
    )
    return MemoryRecord(memory=memory, vector=vector, edges=hub_edges(m.id, ex, now))


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def brute_force(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def connect_neo4j(dimensions: int) -> Neo4jStore:
    """The Neo4j the settings name (``HIPPO_NEO4J__*``), its schema set up."""
    settings = HippoSettings().neo4j
    store = Neo4jStore.connect(
        settings.uri,
        user=settings.user,
        password=settings.password,
        database=settings.database,
        dimensions=dimensions,
        max_retry_s=settings.max_retry_s,
        timeout_s=settings.timeout_s,
    )
    store.verify_connectivity()
    store.setup()
    log(f"  neo4j at {settings.uri} (database {settings.database}), schema set up")
    return store


WARM_BATCH = 50
"""Warm-up recalls are timed in batches of this many."""
WARM_SETTLED = 0.95
"""Warm-up ends at the first batch whose median is at least this share of the
batch before's: recall has stopped getting faster."""
WARM_MAX_BATCHES = 40


def warm_up(
    service: Hippocampus, collection: str, embedder: Embedder, recipe: str, seed: int
) -> list[float]:
    """Recall until recall has stopped getting faster; the median (ms) of each
    batch of :data:`WARM_BATCH` warm-up recalls.

    Warm-up questions are variations of the timed ones that the timed run never
    asks. A store read from one process warms its caches and pools in a batch
    or two. A fresh Neo4j server takes longer, as its JIT compiles the read
    paths only after hundreds of recalls (batch medians 125 → 57 ms over 250
    recalls at 100,000 memories); a served Neo4j has long done that.
    """
    fixed = len(QUERIES)
    texts = queries(fixed + WARM_BATCH * WARM_MAX_BATCHES, seed=seed + 1)[fixed:]
    vectors = embedder.encode(texts).astype(np.float32)
    medians: list[float] = []
    for b in range(WARM_MAX_BATCHES):
        ms: list[float] = []
        for i in range(b * WARM_BATCH, (b + 1) * WARM_BATCH):
            start = time.perf_counter()
            service.recall(collection, texts[i], limit=K, query_vector=vectors[i], recipe=recipe)
            ms.append((time.perf_counter() - start) * 1000)
        medians.append(statistics.median(ms))
        if len(medians) >= 2 and medians[-1] >= WARM_SETTLED * medians[-2]:
            break
    return medians


def timed_recalls(
    service: Hippocampus,
    collection: str,
    qtexts: list[str],
    qvectors: np.ndarray,
    recipe: str,
) -> tuple[list[float], list[list[str]]]:
    """Per-query recall latency (ms) and the ids found."""
    gc.collect()
    recall_ms: list[float] = []
    results: list[list[str]] = []
    for text, qv in zip(qtexts, qvectors, strict=True):
        start = time.perf_counter()
        result = service.recall(collection, text, limit=K, query_vector=qv, recipe=recipe)
        recall_ms.append((time.perf_counter() - start) * 1000)
        results.append([h.memory.id for h in result.hits])
    return recall_ms, results


def run(
    n: int,
    n_queries: int,
    vectors_kind: str,
    seed: int,
    recipe: str,
    store_kind: str = "embedded",
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    options = options or {}
    items = memories(n, seed=seed)
    embedder: Embedder = (
        SentenceTransformerEmbedder() if vectors_kind == "minilm" else HashingEmbedder()
    )
    t0 = time.perf_counter()
    # Unit rows, float32, contiguous: what the index holds, and the brute force's
    # matrix (normalized in place: one copy at a million).
    vectors = np.ascontiguousarray(cached_vectors(embedder, items, seed), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms == 0, 1, norms)
    matrix = vectors
    vectors_s = time.perf_counter() - t0
    qtexts = queries(n_queries)
    qvectors = embedder.encode(qtexts).astype(np.float32)

    cold_s: float | None = None
    server: dict[str, Any] = {}
    if store_kind == "neo4j":
        neo4j = connect_neo4j(int(vectors.shape[1]))
        collection = f"{COLLECTION}-{uuid.uuid4().hex[:8]}"
        service = Hippocampus(neo4j, embedder, SpacyConceptExtractor())
        try:
            t0 = time.perf_counter()
            edges = build(neo4j, items, vectors, embedder.name, collection)
            build_s = time.perf_counter() - t0
            log(f"  built {n} memories with {edges} hub edges in {build_s:.1f} s")
            warm = warm_up(service, collection, embedder, recipe, seed)
            recall_ms, results = timed_recalls(service, collection, qtexts, qvectors, recipe)
            server = neo4j_figures(neo4j, collection, qtexts, qvectors, recipe, options)
        finally:
            if not options.get("keep"):
                neo4j.drop_collection(collection)
            service.close()
    else:
        with tempfile.TemporaryDirectory(prefix="hippo-bench-") as tmp:
            data = Path(tmp) / "data"
            approximate = options.get("approximate_from") or APPROXIMATE_FROM
            store = EmbeddedStore(data, synchronous="NORMAL", approximate_from=approximate)
            t0 = time.perf_counter()
            rates: list[float] = []
            edges = build(store, items, vectors, embedder.name, rates=rates)
            build_s = time.perf_counter() - t0
            server["write_rates"] = [round(r) for r in rates]
            log(f"  built {n} memories with {edges} hub edges in {build_s:.1f} s")
            t0 = time.perf_counter()
            store.wait_for_graphs(COLLECTION)
            server["graph_wait_s"] = round(time.perf_counter() - t0, 1)
            server["graph"] = bool(store.graph_state(COLLECTION))
            log(f"  vector graph: {server['graph']}, waited {server['graph_wait_s']} s for it")
            t0 = time.perf_counter()
            store.wait_for_text_candidates(COLLECTION)
            server["text_candidates"] = bool(store.reads_side_by_side(COLLECTION))
            server["text_wait_s"] = round(time.perf_counter() - t0, 1)
            log(f"  text candidates: {server['text_candidates']}, waited {server['text_wait_s']} s")
            service = Hippocampus(store, embedder, SpacyConceptExtractor())
            try:
                warm = warm_up(service, COLLECTION, embedder, recipe, seed)
                recall_ms, results = timed_recalls(service, COLLECTION, qtexts, qvectors, recipe)
                server.update(
                    vector_search(store, embedder.name, matrix, qvectors, [m.id for m in items])
                )
                server.update(memory_figures())
                server["bench_matrix_mb"] = round(matrix.nbytes / 2**20)
            finally:
                service.close()

            # A restart rebuilds the index from SQLite on the collection's first use
            # (and loads the graph saved at close).
            start = time.perf_counter()
            store = EmbeddedStore(data, synchronous="NORMAL", approximate_from=approximate)
            try:
                store.search_vectors(
                    COLLECTION, qvectors[0], model=embedder.name, k=K, filters=RecallFilters()
                )
                cold_s = time.perf_counter() - start
            finally:
                store.close()

    for qv in qvectors[:20]:
        brute_force(matrix, qv, K)
    brute_ms: list[float] = []
    agree = 0
    for qv, got in zip(qvectors, results, strict=True):
        start = time.perf_counter()
        top = brute_force(matrix, qv, K)
        brute_ms.append((time.perf_counter() - start) * 1000)
        agree += len({items[i].id for i in top} & set(got))

    recall_p50 = percentile(recall_ms, 50)
    brute_p50 = percentile(brute_ms, 50)
    return {
        "store": store_kind,
        "n": n,
        "recipe": recipe,
        "queries": n_queries,
        "k": K,
        "dim": int(vectors.shape[1]),
        "vectors": embedder.name,
        "query_vectors": embedder.name,
        "recall_p50_ms": round(recall_p50, 3),
        "recall_p95_ms": round(percentile(recall_ms, 95), 3),
        "recall_mean_ms": round(statistics.fmean(recall_ms), 3),
        "brute_force_p50_ms": round(brute_p50, 3),
        "brute_force_p95_ms": round(percentile(brute_ms, 95), 3),
        "ratio_p50": round(recall_p50 / brute_p50, 2),
        "top_k_agreement": round(agree / (K * n_queries), 4),
        "warm_up_p50_ms": [round(m, 1) for m in warm],
        "edges": edges,
        "vectors_s": round(vectors_s, 1),
        "build_s": round(build_s, 1),
        "cold_index_build_s": round(cold_s, 2) if cold_s is not None else None,
        "build_per_s": round(n / build_s, 1),
        **server,
    }


def vector_search(
    store: EmbeddedStore, model: str, matrix: np.ndarray, qvectors: np.ndarray, ids: list[str]
) -> dict[str, Any]:
    """The store's own vector search (no passages, no filter) against brute force:
    its p50 and recall@10, a hit being a memory whose exact similarity (from the
    benchmark's matrix, row ``i`` for ``ids[i]``) reaches the tenth best (equal
    scores are interchangeable)."""
    row_of = {memory_id: i for i, memory_id in enumerate(ids)}
    times: list[float] = []
    hits = 0
    for qv in qvectors:
        start = time.perf_counter()
        found = store.search_vectors(
            COLLECTION, qv, model=model, k=K, filters=RecallFilters(), passages=False
        )
        times.append((time.perf_counter() - start) * 1000)
        unit = qv / max(float(np.linalg.norm(qv)), 1e-12)
        tenth = float(np.sort(matrix @ unit)[-K])
        exact = [float(matrix[row_of[memory_id]] @ unit) for memory_id, _ in found]
        hits += sum(1 for score in exact if score >= tenth - 1e-5)
    return {
        "vector_search_p50_ms": round(percentile(times, 50), 3),
        "vector_recall_at_10": round(hits / (K * len(qvectors)), 4),
    }


def memory_figures() -> dict[str, Any]:
    """The process's resident memory now and at its peak (MB)."""
    status = Path("/proc/self/status")
    fields: dict[str, int] = {}
    if status.exists():
        for line in status.read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) // 1024
    return {
        "rss_mb": fields.get("VmRSS"),
        "peak_rss_mb": fields.get("VmHWM"),
    }


def neo4j_figures(
    store: Neo4jStore,
    collection: str,
    qtexts: list[str],
    qvectors: np.ndarray,
    recipe: str,
    options: dict[str, Any],
) -> dict[str, Any]:
    """Database hits per recall, and the server's memory, for the table."""
    from tests.contract.plans import db_hits, planning

    driver, planned = planning(store, mode="PROFILE")
    service = Hippocampus(planned, HashingEmbedder(), SpacyConceptExtractor())
    totals: list[int] = []
    per: dict[str, list[int]] = {}
    asked = list(zip(qtexts, qvectors, strict=True))[: options.get("profile_queries", 10)]
    try:
        for text, qv in asked:
            driver.planned.clear()
            service.recall(collection, text, limit=K, query_vector=qv, recipe=recipe)
            hits: dict[str, int] = {}
            for p in driver.planned:
                hits[p.name] = hits.get(p.name, 0) + db_hits(p.plan)
            totals.append(sum(hits.values()))
            for name, h in hits.items():
                per.setdefault(name, []).append(h)
    finally:
        service.close()
    heap = store._driver.execute_query(
        "CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes "
        "RETURN attributes.HeapMemoryUsage.value.properties AS heap",
        database_=store._database,
    ).records[0]["heap"]
    pagecache = store._driver.execute_query(
        "SHOW SETTINGS YIELD name, value WHERE name = 'server.memory.pagecache.size' RETURN value",
        database_=store._database,
    ).records[0]["value"]
    home = options.get("neo4j_home")
    size = None
    if home:
        folder = Path(home) / "data" / "databases" / store._database
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return {
        "db_hits_per_recall": int(np.median(totals)) if totals else None,
        "db_hits_by_statement": {k: int(np.median(v)) for k, v in sorted(per.items())},
        "heap_used_mb": round(heap["used"] / 2**20),
        "heap_max_mb": round(heap["max"] / 2**20),
        "pagecache": pagecache,
        "store_mb": round(size / 2**20) if size is not None else None,
    }


def print_table(r: dict[str, Any]) -> None:
    cold = r["cold_index_build_s"]
    warm = r["warm_up_p50_ms"]
    rows = [
        ("store", r["store"]),
        ("memories", f"{r['n']} x {r['dim']}-d float32, {r['edges']} hub edges"),
        ("memory vectors", f"{r['vectors']} (precomputed, cached in .bench-cache/)"),
        ("query vectors", f"{r['query_vectors']}, {r['queries']} queries, embedded before timing"),
        ("store build", f"{r['build_s']} s (add_memories in chunks of 2,000)"),
        ("vectors", f"{r['vectors_s']} s (loaded from cache, or computed and cached)"),
        (
            "warm-up",
            f"{WARM_BATCH * len(warm)} recalls of other questions, batch p50 "
            + " → ".join(f"{m:g}" for m in warm)
            + " ms (until a batch is no more than 5% faster)",
        ),
        ("recall p50", f"{r['recall_p50_ms']:8.3f} ms   (recipe {r['recipe']}, limit={r['k']})"),
        ("recall p95", f"{r['recall_p95_ms']:8.3f} ms"),
        ("brute force p50", f"{r['brute_force_p50_ms']:8.3f} ms   (numpy M @ q + argpartition)"),
        ("brute force p95", f"{r['brute_force_p95_ms']:8.3f} ms"),
        ("ratio p50", f"{r['ratio_p50']:8.2f} x   (target: <= 2)"),
        ("top-k agreement", f"{100 * r['top_k_agreement']:.1f}% of recall hits = brute force's"),
        (
            "cold index build",
            f"{cold} s (reopen + first search)"
            if cold is not None
            else "n/a (Neo4j keeps its indexes; nothing to rebuild)",
        ),
    ]
    rows.append(("build rate", f"{r['build_per_s']} memories/s"))
    if r.get("write_rates"):
        first, last = r["write_rates"][0], r["write_rates"][-1]
        rows.append(
            (
                "store writes",
                f"{first} memories/s in the first tenth, {last} in the last "
                f"({100 * last / first:.0f}%; each tenth: {r['write_rates']})",
            )
        )
    if r.get("vector_search_p50_ms") is not None:
        graph = "HNSW graph, candidates scored exactly" if r["graph"] else "exact scan"
        rows += [
            (
                "vector search",
                f"{graph}; waited {r['graph_wait_s']} s for the graph after the build",
            ),
            (
                "vector search p50",
                f"{r['vector_search_p50_ms']:8.3f} ms   (store.search_vectors, k=10)",
            ),
            ("vector recall@10", f"{r['vector_recall_at_10']:.4f} against brute force"),
            (
                "text search",
                ("tantivy's candidates, scored exactly" if r["text_candidates"] else "exact BM25")
                + f"; waited {r['text_wait_s']} s for them after the graph",
            ),
            (
                "resident memory",
                f"{r['rss_mb']} MB now, {r['peak_rss_mb']} MB at peak "
                f"(the benchmark's own matrix: {r['bench_matrix_mb']} MB of it)",
            ),
        ]
    if r.get("db_hits_per_recall") is not None:
        by = ", ".join(f"{k} {v}" for k, v in r["db_hits_by_statement"].items())
        rows += [
            ("db hits / recall", f"{r['db_hits_per_recall']} (median; {by})"),
            ("heap", f"{r['heap_used_mb']} MB used of {r['heap_max_mb']} MB"),
            ("page cache", f"{r['pagecache']} configured"),
            (
                "store on disk",
                f"{r['store_mb']} MB" if r["store_mb"] is not None else "n/a (no --neo4j-home)",
            ),
        ]
    width = max(len(name) for name, _ in rows)
    print("recall benchmark")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


# -- long memories: the tail -----------------------------------------------------------

LONG_RECIPES = ("DENSE", DEFAULT_RECIPE)
LONG_TARGET = 3.0  # p95 / p50
LONG_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def build_long(service: Hippocampus, collections: list[str], per_collection: int, seed: int) -> int:
    """Remember one long conversation per collection through the engine; returns
    how many memories were stored."""
    stored = 0
    for c, collection in enumerate(collections):
        messages = chat_messages(per_collection, seed=seed + c)
        for start in range(0, len(messages), 128):
            batch = [
                NewMemory(
                    id=m.id,
                    content=m.content,
                    category="conversation",
                    conversation_id=f"chat-{c}",
                    occurred_at=LONG_START + timedelta(minutes=m.minute),
                    speaker=m.speaker,
                )
                for m in messages[start : start + 128]
            ]
            stored += sum(1 for r in service.remember_many(collection, batch) if r.created)
        log(f"  {collection}: {len(messages)} long messages remembered")
    return stored


def run_long(n_collections: int, per_collection: int, n_queries: int, seed: int) -> dict[str, Any]:
    embedder = HashingEmbedder()
    collections = [f"{COLLECTION}-long-{c}" for c in range(n_collections)]
    per = max(1, n_queries // n_collections)
    asked = {c: chat_queries(per, seed=seed + 100 + i) for i, c in enumerate(collections)}
    # In turn from every collection, as a served engine gets them.
    order = [(c, asked[c][i]) for i in range(per) for c in collections]
    qvectors = embedder.encode([q for _, q in order]).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="hippo-bench-long-") as tmp:
        data = Path(tmp) / "data"
        builder = Hippocampus(
            EmbeddedStore(data, synchronous="NORMAL"),
            embedder,
            KeywordConceptExtractor(max_concepts=8, max_triggers=4),
        )
        t0 = time.perf_counter()
        try:
            stored = build_long(builder, collections, per_collection, seed)
            passages = sum(
                len(rows)
                for i, c in enumerate(collections)
                for rows in builder.store.get_passages(
                    c, [m.id for m in chat_messages(per_collection, seed=seed + i)]
                ).values()
            )
        finally:
            builder.close()
        build_s = time.perf_counter() - t0
        log(f"  built {stored} memories in {build_s:.1f} s")

        # A served engine: reopened, every collection's indexes warmed at start.
        store = EmbeddedStore(data, synchronous="NORMAL")
        t0 = time.perf_counter()
        store.warm()
        warm_s = time.perf_counter() - t0
        service = Hippocampus(store, embedder, SpacyConceptExtractor())
        rows: dict[str, dict[str, float]] = {}
        try:
            for recipe in LONG_RECIPES:
                for (collection, text), qv in list(zip(order, qvectors, strict=True))[
                    : 2 * n_collections
                ]:  # two per collection, untimed, as a served engine has seen some
                    service.recall(collection, text, limit=K, query_vector=qv, recipe=recipe)
                gc.collect()
                ms: list[float] = []
                for (collection, text), qv in zip(order, qvectors, strict=True):
                    start = time.perf_counter()
                    service.recall(collection, text, limit=K, query_vector=qv, recipe=recipe)
                    ms.append((time.perf_counter() - start) * 1000)
                p50, p95 = percentile(ms, 50), percentile(ms, 95)
                rows[recipe] = {
                    "p50_ms": round(p50, 2),
                    "p95_ms": round(p95, 2),
                    "p99_ms": round(percentile(ms, 99), 2),
                    "max_ms": round(max(ms), 2),
                    "ratio_p95_p50": round(p95 / p50, 2),
                }
        finally:
            service.close()
    return {
        "store": "embedded",
        "collections": n_collections,
        "memories": stored,
        "memories_wanted": n_collections * per_collection,
        "passages": passages,
        "queries": len(order),
        "k": K,
        "vectors": embedder.name,
        "build_s": round(build_s, 1),
        "warm_s": round(warm_s, 2),
        "recipes": rows,
        "target_ratio": LONG_TARGET,
    }


def print_long_table(r: dict[str, Any]) -> None:
    print("recall benchmark, long memories")
    print(
        f"{r['collections']} collections, {r['memories']} of {r['memories_wanted']} long chat "
        f"messages stored (1,500-6,000 characters), {r['passages']} passage vectors beside "
        f"their own, {r['vectors']}"
    )
    print(
        f"built in {r['build_s']} s through remember; reopened and warmed in {r['warm_s']} s; "
        f"{r['queries']} queries in turn over the collections, one at a time, limit={r['k']}"
    )
    target = r["target_ratio"]
    print(
        f"{'recipe':<14} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'p95/p50':>8}  (target: <= {target:g})"
    )
    for recipe, row in r["recipes"].items():
        verdict = "met" if row["ratio_p95_p50"] <= target else "MISSED"
        print(
            f"{recipe:<14} {row['p50_ms']:8.2f} {row['p95_ms']:8.2f} {row['p99_ms']:8.2f} "
            f"{row['max_ms']:8.2f} {row['ratio_p95_p50']:8.2f}  {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories (default %(default)s)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--vectors",
        choices=("hashing", "minilm"),
        default="hashing",
        help="embedder for memories and queries (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--approximate-from",
        type=int,
        help="embedded: vectors from which search goes through the graph "
        f"(default {APPROXIMATE_FROM})",
    )
    parser.add_argument(
        "--store",
        choices=("embedded", "neo4j", "both"),
        default="embedded",
        help="store to measure (default %(default)s; neo4j: the one HIPPO_NEO4J__* names; "
        "both: embedded, then Neo4j, in one run)",
    )
    parser.add_argument("--profile-queries", type=int, default=10, help="Neo4j: recalls profiled")
    parser.add_argument("--neo4j-home", help="Neo4j: the server's home, for the store's size")
    parser.add_argument("--keep", action="store_true", help="Neo4j: keep the collection")
    parser.add_argument(
        "--recipe", default=DEFAULT_RECIPE, help="recall recipe (default %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    parser.add_argument(
        "--long", action="store_true", help="recall tails on long memories (see above)"
    )
    parser.add_argument("--long-collections", type=int, default=10)
    parser.add_argument("--long-memories", type=int, default=1_400, help="per collection")
    args = parser.parse_args()
    if args.long:
        long = run_long(args.long_collections, args.long_memories, args.queries, args.seed)
        if args.json:
            print(json.dumps(long))
        else:
            print_long_table(long)
        return
    options = {
        "profile_queries": args.profile_queries,
        "neo4j_home": args.neo4j_home,
        "keep": args.keep,
        "approximate_from": args.approximate_from,
    }
    stores = ("embedded", "neo4j") if args.store == "both" else (args.store,)
    results = [
        run(args.n, args.queries, args.vectors, args.seed, args.recipe, kind, options)
        for kind in stores
    ]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results))
    else:
        for i, result in enumerate(results):
            if i:
                print()
            print_table(result)


if __name__ == "__main__":
    main()
