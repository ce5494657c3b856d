"""Retrieval quality on multi-hop question sets: R@2, R@5 and All@5 per method.

Each corpus passage becomes one memory (title and text) in a fresh collection;
each question is recalled with every method and scored against its gold
passages. Methods map to recipes: bm25 → BM25, dense → DENSE, hybrid → HYBRID,
graph → HYBRID_GRAPH, default → the engine's default recipe. Recalls run with learning off, so the
graph is the same for every method and question order does not matter.

    .venv/bin/python bench/quality.py --data ../shared/data
    .venv/bin/python bench/quality.py --data ../shared/data --json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.embed import HashingEmbedder, SentenceTransformerEmbedder
from engine.extract import SpacyConceptExtractor
from engine.model import NewMemory
from engine.retrieve.config import DEFAULT_RECIPE, RECIPES
from engine.service import Hippocampus
from engine.store.embedded import EmbeddedStore

METHODS = {
    "bm25": "BM25",
    "dense": "DENSE",
    "hybrid": "HYBRID",
    "graph": "HYBRID_GRAPH",
    "default": DEFAULT_RECIPE,
}
COLLECTION = "bench:quality"


@dataclass
class Dataset:
    name: str
    passages: list[tuple[str, str]]  # (title, text)
    questions: list[tuple[str, set[int]]]  # (question, gold passage indexes)


def load_musique(folder: Path) -> Dataset:
    corpus = json.loads((folder / "musique_train_corpus.json").read_text())
    passages = [(p["title"], p["text"]) for p in corpus]
    index = {p: i for i, p in enumerate(passages)}
    questions = []
    for q in json.loads((folder / "musique_train.json").read_text()):
        gold = {
            index[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"]
        }
        questions.append((q["question"], gold))
    return Dataset("musique", passages, questions)


def load_hotpotqa(folder: Path) -> Dataset:
    corpus = json.loads((folder / "hotpotqa_train_corpus.json").read_text())
    passages = [(title, "".join(sentences)) for title, sentences in corpus.items()]
    index = {title: i for i, (title, _) in enumerate(passages)}
    questions = []
    for q in json.loads((folder / "hotpotqa_train.json").read_text()):
        gold = {index[title] for title, _ in q["supporting_facts"]}
        questions.append((q["question"], gold))
    return Dataset("hotpotqa", passages, questions)


LOADERS = {"musique": ("musique-100", load_musique), "hotpotqa": ("hotpotqa-100", load_hotpotqa)}


def index_corpus(service: Hippocampus, data: Dataset) -> dict[str, int]:
    """Remember every passage; returns memory id → passage index (duplicates map to
    the passage stored first)."""
    owner: dict[str, int] = {}
    batch = 128
    for start in range(0, len(data.passages), batch):
        chunk = data.passages[start : start + batch]
        items = [
            NewMemory(content=f"{title}\n{text}", id=f"p{start + i}", category="documentation")
            for i, (title, text) in enumerate(chunk)
        ]
        for i, outcome in enumerate(service.remember_many(COLLECTION, items)):
            owner.setdefault(outcome.memory.id, start + i)
    return owner


def evaluate(
    service: Hippocampus, data: Dataset, owner: dict[str, int], methods: list[str]
) -> dict[str, dict[str, float]]:
    vectors = service.embedder.encode([q for q, _ in data.questions])
    scores: dict[str, dict[str, float]] = {}
    for method in methods:
        r2 = r5 = all5 = 0.0
        for (question, gold), vector in zip(data.questions, vectors, strict=True):
            result = service.recall(
                COLLECTION,
                question,
                limit=5,
                query_vector=vector,
                recipe=METHODS[method],
                learn=False,
            )
            ranked = [owner.get(h.memory.id, -1) for h in result.hits]
            hit2 = len(gold & set(ranked[:2]))
            hit5 = len(gold & set(ranked[:5]))
            r2 += hit2 / len(gold)
            r5 += hit5 / len(gold)
            all5 += 1.0 if hit5 == len(gold) else 0.0
        n = len(data.questions)
        scores[method] = {"r2": r2 / n, "r5": r5 / n, "all5": all5 / n}
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with the data sets")
    parser.add_argument("--datasets", default="musique,hotpotqa")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or any(METHODS[m] not in RECIPES for m in methods):
        parser.error(f"unknown methods: {unknown}")

    embedder = SentenceTransformerEmbedder() if args.embedder == "minilm" else HashingEmbedder()
    extractor = SpacyConceptExtractor()
    results: dict[str, Any] = {}
    for name in [d for d in args.datasets.split(",") if d]:
        folder, loader = LOADERS[name]
        data = loader(args.data / folder)
        with tempfile.TemporaryDirectory(prefix="hippo-quality-") as tmp:
            service = Hippocampus(EmbeddedStore(Path(tmp)), embedder, extractor)
            try:
                t0 = time.perf_counter()
                owner = index_corpus(service, data)
                t1 = time.perf_counter()
                results[name] = evaluate(service, data, owner, methods)
                t2 = time.perf_counter()
            finally:
                service.close()
        print(
            f"{name}: {len(data.passages)} passages indexed in {t1 - t0:.1f} s, "
            f"{len(data.questions)} questions x {len(methods)} methods in {t2 - t1:.1f} s",
            file=sys.stderr,
        )

    if args.json:
        print(json.dumps(results))
        return 0
    print(f"retrieval quality ({embedder.name}, default recipe {DEFAULT_RECIPE})")
    for name, by_method in results.items():
        print(f"\n{name:<10} {'R@2':>6} {'R@5':>6} {'All@5':>6}")
        for method, s in by_method.items():
            print(f"{method:<10} {s['r2']:>6.3f} {s['r5']:>6.3f} {s['all5']:>6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
