"""Ingest throughput: ``remember_many`` into a fresh embedded store.

    .venv/bin/python bench/ingest.py --n 10000 [--batch 64] [--embedder minilm|hashing] [--json]

The real pipeline (MiniLM embeddings unless told otherwise, spaCy extraction,
the embedded store with its default ``synchronous=FULL``) on synthetic but
realistic texts. The time of each stage is measured by wrapping the embedder's
``encode``, the extractor's ``extract_many`` and the store's methods; "other" is
the rest (validation, de-duplication bookkeeping, building records). Loading the
models is reported apart and not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synth import memories
from engine.embed import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from engine.extract import SpacyConceptExtractor
from engine.model import NewMemory
from engine.service import Hippocampus
from engine.store.embedded import EmbeddedStore


class Stopwatch:
    """Accumulates the time spent in wrapped callables, by stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, obj: Any, method: str, stage: str) -> None:
        inner: Callable[..., Any] = getattr(obj, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start

        setattr(obj, method, timed)


def run(
    n: int, batch: int, embed_batch: int, embedder_kind: str, seed: int, synchronous: str
) -> dict[str, Any]:
    items = memories(n, seed=seed)
    news = [
        NewMemory(content=m.content, id=m.id, category=m.category, tags=list(m.tags)) for m in items
    ]
    start = time.perf_counter()
    embedder: Embedder = (
        SentenceTransformerEmbedder(batch_size=embed_batch)
        if embedder_kind == "minilm"
        else HashingEmbedder()
    )
    extractor = SpacyConceptExtractor()
    # Warm both up: the first calls allocate and JIT-select kernels.
    warm = [m.content for m in items[:16]]
    embedder.encode(warm)
    extractor.extract_many(warm)
    load_s = time.perf_counter() - start

    with tempfile.TemporaryDirectory(prefix="hippo-bench-") as tmp:
        store = EmbeddedStore(Path(tmp) / "data", synchronous=synchronous)
        service = Hippocampus(store, embedder, extractor, embed_batch_size=embed_batch)
        watch = Stopwatch()
        watch.wrap(embedder, "encode", "embed")
        watch.wrap(extractor, "extract_many", "extract")
        for method in ("add_memories", "find_by_hash", "get_memories"):
            watch.wrap(store, method, "store")
        try:
            start = time.perf_counter()
            for i in range(0, n, batch):
                service.remember_many("bench", news[i : i + batch])
            seconds = time.perf_counter() - start
            stored = store.stats("bench").memories
        finally:
            service.close()
    if stored != n:
        raise SystemExit(f"stored {stored} memories, expected {n}")

    stages = {stage: watch.seconds.get(stage, 0.0) for stage in ("embed", "extract", "store")}
    torch_threads = None
    if embedder_kind == "minilm":
        import torch

        torch_threads = torch.get_num_threads()
    return {
        "n": n,
        "batch": batch,
        "embed_batch": embed_batch,
        "seconds": round(seconds, 3),
        "memories_per_s": round(n / seconds, 1),
        "embed_s": round(stages["embed"], 3),
        "extract_s": round(stages["extract"], 3),
        "store_s": round(stages["store"], 3),
        "other_s": round(seconds - sum(stages.values()), 3),
        "load_s": round(load_s, 3),
        "embedder": embedder.name,
        "extractor": extractor.name,
        "synchronous": synchronous,
        "cpus": os.cpu_count(),
        "torch_threads": torch_threads,
        "mean_words": round(sum(len(m.content.split()) for m in items) / n, 1),
    }


def print_table(r: dict[str, Any]) -> None:
    total = r["seconds"]

    def share(s: float) -> str:
        return f"{s:>9.2f} s  {100 * s / total:5.1f}%  {r['n'] / s if s else 0:>9.0f}/s alone"

    rows = [
        ("memories", f"{r['n']} (mean {r['mean_words']} words), batches of {r['batch']}"),
        ("embed batch", f"{r['embed_batch']} texts per forward pass"),
        ("pipeline", f"{r['embedder']} + {r['extractor']} + embedded store ({r['synchronous']})"),
        ("machine", f"{r['cpus']} CPUs, torch threads {r['torch_threads']}"),
        ("model load", f"{r['load_s']:.2f} s (not counted)"),
        ("total", f"{total:>9.2f} s"),
        ("throughput", f"{r['memories_per_s']:>9.1f} memories/s"),
        ("  embedding", share(r["embed_s"])),
        ("  extraction", share(r["extract_s"])),
        ("  store", share(r["store_s"])),
        ("  other", share(r["other_s"])),
    ]
    width = max(len(name) for name, _ in rows)
    print("ingest benchmark")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories (default %(default)s)")
    parser.add_argument("--batch", type=int, default=64, help="memories per remember_many call")
    parser.add_argument(
        "--embed-batch",
        type=int,
        default=64,
        help="texts per forward pass (HIPPO_EMBED_BATCH_SIZE)",
    )
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--synchronous", choices=("FULL", "NORMAL"), default="FULL")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    args = parser.parse_args()
    result = run(args.n, args.batch, args.embed_batch, args.embedder, args.seed, args.synchronous)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
