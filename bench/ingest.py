"""Ingest throughput: each stage alone, then the whole pipeline, in one run.

    .venv/bin/python bench/ingest.py --n 10000 [--batch 64] [--embedder minilm|hashing] [--json]
    .venv/bin/python bench/ingest.py --n 10000 --store neo4j   # the writes on Neo4j too
    .venv/bin/python bench/ingest.py --n 1000000 --vectors hashing --extractor keywords \
        --only write        # the write path alone at a million, its rate tenth by tenth

The real pipeline (MiniLM embeddings unless told otherwise, spaCy extraction,
the embedded store with its default ``synchronous=FULL``) on synthetic but
realistic texts, in batches of ``--batch`` memories. Measured one after the
other in the same process, so the figures compare:

- extraction alone: spaCy over every batch, as the stream's first stage runs it;
- embedding alone: the contents and the hub names they bring, in runs sorted by
  length, as the stream's second stage embeds them. It has both cores to
  itself, so it is the ceiling: the pipeline shares them with the other stages;
- writes alone: ``remember_many`` batch after batch into a fresh store with the
  vectors and extractions looked up, not computed: de-duplication, the gate,
  building records, the store's reads and writes;
- the pipeline: ``remember_batches`` into a fresh store, the three stages at
  once on their threads;
- back to back: ``remember_many`` batch after batch (each batch extracted,
  embedded and written before the next), as ingest ran before the stream.

Loading the models is reported apart and not counted. The writes alone are also
timed tenth by tenth of the memories: a write path that reads more as the
collection grows shows as a falling rate. ``--only`` runs the named stages of
writes, the pipeline and back to back (extraction and embedding always run: the
writes replay them).

With ``--store neo4j`` the writes alone and the pipeline run on the embedded
store and then, in the same run, in a collection of their own (dropped
afterwards) on the Neo4j that ``HIPPO_NEO4J__URI``, ``__USER``, ``__PASSWORD``
and ``__DATABASE`` name (its schema set up first), so the two stores compare.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.recall import connect_neo4j
from bench.synth import memories
from hippocampus.embed import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from hippocampus.extract import Extraction, KeywordConceptExtractor, SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus
from hippocampus.services.remembering import EMBED_RUN
from hippocampus.store.embedded import EmbeddedStore

COLLECTION = "bench"


class Replay:
    """An embedder and extractor that look up what the real ones computed, so
    the writes are timed alone."""

    def __init__(
        self,
        name: str,
        dim: int,
        vectors: dict[str, npt.NDArray[np.float32]],
        extractions: dict[str, Extraction],
    ) -> None:
        self.name = name
        self.dim = dim
        self._vectors = vectors
        self._extractions = extractions

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        return [self._extractions[t] for t in texts]


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


@contextmanager
def _service(
    embedder: Any, extractor: Any, synchronous: str, embed_batch: int, store_kind: str = "embedded"
) -> Iterator[tuple[Hippocampus, str]]:
    """A service on a fresh store (embedded) or a fresh collection (Neo4j), and
    the collection to write to."""
    if store_kind == "neo4j":
        neo4j = connect_neo4j(embedder.dim)
        collection = f"{COLLECTION}-{uuid.uuid4().hex[:8]}"
        service = Hippocampus(neo4j, embedder, extractor, embed_batch_size=embed_batch)
        try:
            yield service, collection
        finally:
            neo4j.drop_collection(collection)
            service.close()
        return
    with tempfile.TemporaryDirectory(prefix="hippo-bench-") as tmp:
        store = EmbeddedStore(Path(tmp) / "data", synchronous=synchronous)
        service = Hippocampus(store, embedder, extractor, embed_batch_size=embed_batch)
        try:
            yield service, COLLECTION
        finally:
            service.close()


def _stored(service: Hippocampus, collection: str, n: int) -> None:
    stored = service.store.stats(collection).memories
    if stored != n:
        raise SystemExit(f"stored {stored} memories, expected {n}")


def run(
    n: int,
    batch: int,
    embed_batch: int,
    embedder_kind: str,
    seed: int,
    synchronous: str,
    back_to_back: bool,
    store_kind: str = "embedded",
    extractor_kind: str = "spacy",
    only: frozenset[str] = frozenset({"write", "pipeline", "back_to_back"}),
) -> dict[str, Any]:
    load_before = os.getloadavg()
    items = memories(n, seed=seed)
    news = [
        NewMemory(content=m.content, id=m.id, category=m.category, tags=list(m.tags)) for m in items
    ]
    batches = [news[i : i + batch] for i in range(0, n, batch)]
    texts = [m.content for m in news]
    start = time.perf_counter()
    embedder: Embedder = (
        SentenceTransformerEmbedder(batch_size=embed_batch)
        if embedder_kind == "minilm"
        else HashingEmbedder()
    )
    extractor = SpacyConceptExtractor() if extractor_kind == "spacy" else KeywordConceptExtractor()
    # Warm both up: the first calls allocate and JIT-select kernels.
    warm = texts[:16]
    embedder.encode(warm)
    extractor.extract_many(warm)
    load_s = time.perf_counter() - start
    seconds: dict[str, float] = {}

    # Extraction alone, batch by batch.
    extractions: dict[str, Extraction] = {}

    def extract_all() -> None:
        for b in batches:
            chunk = [m.content for m in b]
            extractions.update(zip(chunk, extractor.extract_many(chunk), strict=True))

    seconds["extract"], _ = _timed(extract_all)
    names = list(
        dict.fromkeys(
            name for e in extractions.values() for name in (*e.domains, *e.triggers, *e.concepts)
        )
    )

    # Embedding alone: contents and then-new hub names, in runs as the stream takes them.
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    with _service(embedder, extractor, synchronous, embed_batch) as (service, _):

        def embed_all() -> None:
            seen: set[str] = set()
            for i in range(0, n, EMBED_RUN):
                chunk = texts[i : i + EMBED_RUN]
                brought = dict.fromkeys(name for t in chunk for name in _names(extractions[t]))
                new = [name for name in brought if name not in seen]
                seen.update(new)
                embedded = service.features.encode([*chunk, *new])
                vectors.update(zip([*chunk, *new], embedded.heads, strict=True))

        seconds["embed"], _ = _timed(embed_all)

    replay = Replay(embedder.name, embedder.dim, vectors, extractions)
    tenths: list[float] = []
    for kind in ("embedded", "neo4j") if store_kind == "neo4j" else ("embedded",):
        suffix = "" if kind == "embedded" else "_neo4j"
        # Writes alone: the models' results looked up.
        if "write" in only:
            with _service(replay, replay, synchronous, embed_batch, kind) as (service, c):
                seconds[f"write{suffix}"], per_tenth = _timed(
                    lambda: _write_by_tenths(service, c, batches, n)
                )
                _stored(service, c, n)
            if kind == "embedded":
                tenths = per_tenth

        # The pipeline.
        if "pipeline" in only:
            with _service(embedder, extractor, synchronous, embed_batch, kind) as (service, c):
                seconds[f"pipeline{suffix}"], _ = _timed(
                    lambda: list(service.remember_batches(c, batches))
                )
                _stored(service, c, n)

    if back_to_back and "back_to_back" in only:
        with _service(embedder, extractor, synchronous, embed_batch) as (service, c):
            seconds["back_to_back"], _ = _timed(
                lambda: [service.remember_many(c, b) for b in batches]
            )
            _stored(service, c, n)

    torch_threads = None
    if embedder_kind == "minilm":
        import torch

        torch_threads = torch.get_num_threads()
    return {
        "n": n,
        "batch": batch,
        "embed_batch": embed_batch,
        "embed_run": EMBED_RUN,
        "hub_names": len(names),
        "seconds": {stage: round(s, 3) for stage, s in seconds.items()},
        "write_rates_by_tenth": [round(rate, 1) for rate in tenths],
        "memories_per_s": {stage: round(n / s, 1) for stage, s in seconds.items()},
        "load_s": round(load_s, 3),
        "embedder": embedder.name,
        "extractor": extractor.name,
        "synchronous": synchronous,
        "store": store_kind,
        "cpus": os.cpu_count(),
        "torch_threads": torch_threads,
        "blas_threads": _blas_threads(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "mean_words": round(sum(len(t.split()) for t in texts) / n, 1),
    }


def _write_by_tenths(
    service: Hippocampus, collection: str, batches: list[list[NewMemory]], n: int
) -> list[float]:
    """``remember_many`` batch after batch; the rate (memories/s) of each tenth of
    the ``n`` memories, a tenth ending with the batch that reaches it."""
    rates: list[float] = []
    written, since, start = 0, 0, time.perf_counter()
    for batch in batches:
        service.remember_many(collection, batch)
        written += len(batch)
        since += len(batch)
        if written * 10 >= (len(rates) + 1) * n or written == n:
            now = time.perf_counter()
            rates.append(since / (now - start))
            since, start = 0, now
    return rates


def _blas_threads() -> int | None:
    """numpy's BLAS threads (the store's vector searches), where threadpoolctl
    can tell."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return next((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), None)


def _names(extraction: Extraction) -> tuple[str, ...]:
    return (*extraction.domains, *extraction.triggers, *extraction.concepts)


STAGES = (
    ("extract", "extraction alone"),
    ("embed", "embedding alone (the ceiling)"),
    ("write", "writes alone"),
    ("pipeline", "pipeline (remember_batches)"),
    ("write_neo4j", "writes alone, Neo4j"),
    ("pipeline_neo4j", "pipeline (remember_batches), Neo4j"),
    ("back_to_back", "back to back (remember_many)"),
)


def print_table(r: dict[str, Any]) -> None:
    rows = [
        ("memories", f"{r['n']} (mean {r['mean_words']} words), batches of {r['batch']}"),
        (
            "embedding",
            f"{r['embed_batch']} texts per forward pass, runs of {r['embed_run']} "
            f"sorted by length; {r['hub_names']} hub names besides",
        ),
        (
            "models",
            f"{r['embedder']} + {r['extractor']} + embedded store ({r['synchronous']})"
            + (", and Neo4j" if r["store"] == "neo4j" else ""),
        ),
        (
            "machine",
            f"{r['cpus']} CPUs, torch threads {r['torch_threads']}, BLAS threads "
            f"{r['blas_threads']}, load average "
            f"{' '.join(map(str, r['load_before']))} before, "
            f"{' '.join(map(str, r['load_after']))} after",
        ),
        ("model load", f"{r['load_s']:.2f} s (not counted)"),
    ]
    width = max(len(name) for name, _ in rows)
    print("ingest benchmark")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print()
    label_width = max(len(label) for _, label in STAGES)
    print(f"{'stage':<{label_width}}  {'seconds':>8}  {'memories/s':>10}")
    for stage, label in STAGES:
        if stage in r["seconds"]:
            s, rate = r["seconds"][stage], r["memories_per_s"][stage]
            print(f"{label:<{label_width}}  {s:>8.2f}  {rate:>10.1f}")
    if "write" in r["seconds"]:
        alone = sum(r["seconds"][s] for s in ("extract", "embed", "write"))
        print(f"{'stages alone, summed':<{label_width}}  {alone:>8.2f}  {r['n'] / alone:>10.1f}")
    rates = r["write_rates_by_tenth"]
    if rates:
        print()
        print(
            f"writes alone by tenth (memories/s): {', '.join(f'{x:.0f}' for x in rates)}; "
            f"the last tenth at {100 * rates[-1] / rates[0]:.0f}% of the first"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories (default %(default)s)")
    parser.add_argument("--batch", type=int, default=64, help="memories per batch")
    parser.add_argument(
        "--embed-batch",
        type=int,
        default=64,
        help="texts per forward pass (HIPPO_EMBED_BATCH_SIZE)",
    )
    parser.add_argument(
        "--embedder", "--vectors", dest="embedder", choices=("minilm", "hashing"), default="minilm"
    )
    parser.add_argument(
        "--extractor",
        choices=("spacy", "keywords"),
        default="spacy",
        help="keywords: the extractor without a model (a million texts through spaCy take most "
        "of an hour here)",
    )
    parser.add_argument(
        "--only",
        default="write,pipeline,back_to_back",
        help="comma-separated stages among write, pipeline, back_to_back (default: all)",
    )
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="FULL")
    parser.add_argument(
        "--store",
        choices=("embedded", "neo4j"),
        default="embedded",
        help="neo4j: the writes and the pipeline on Neo4j too, beside the embedded store",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--no-back-to-back",
        action="store_true",
        help="skip remember_many batch after batch (the slowest run)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    args = parser.parse_args()
    result = run(
        args.n,
        args.batch,
        args.embed_batch,
        args.embedder,
        args.seed,
        args.synchronous,
        not args.no_back_to_back,
        args.store,
        args.extractor,
        _stages(args.only, parser),
    )
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)


def _stages(only: str, parser: argparse.ArgumentParser) -> frozenset[str]:
    stages = frozenset(name.strip() for name in only.split(",") if name.strip())
    unknown = stages - {"write", "pipeline", "back_to_back"}
    if unknown or not stages:
        parser.error(f"--only takes write, pipeline and back_to_back, not {only!r}")
    return stages


if __name__ == "__main__":
    main()
