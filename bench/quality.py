"""Retrieval quality on the dev sets: every recipe, R@k and All@k, per question type.

Three sets (see the data folder's README):

- MuSiQue-100 and HotpotQA-100: each corpus passage becomes one memory (title
  and text) in one collection; R@2, R@5 and All@5.
- beam-100k: each of its 20 long user–assistant chats becomes a collection, one
  memory per message (content past the engine's cap is cut there), remembered
  in order with its conversation, speaker and time; each chat's questions are
  asked of its own collection. R@5, R@10 and All@10, overall and per type.

Every recipe runs (``--methods`` picks some, by recipe name or ``default``).
Recalls run with learning off, so the graph is the same for every recipe and
question order does not matter.

    .venv/bin/python bench/quality.py --data ../shared/data
    .venv/bin/python bench/quality.py --data ../shared/data --datasets beam --json
    .venv/bin/python bench/quality.py --data ../shared/data --cache /tmp/hippo-vectors

``--dense-noise SIGMA`` measures how each recipe holds up when similarity is a
weak guide, as it is on sets where a plain keyword index beats the embedding
model: each question's vector, at unit length, gets Gaussian noise of norm
about ``SIGMA`` (``SIGMA/sqrt(dim)`` per coordinate; the same draw for every
recipe, ``--seed`` picks it) and is scaled back to unit length. At 3, ``DENSE``
falls some 25 points below ``BM25`` on MuSiQue and HotpotQA. The noise also
shrinks every similarity toward 0, which flatters recipes that add raw cosine
to other scores (``WEIGHTED``, ``SEED_COMPOSITE``): compare the default with
the single signals there. Every run ends with the default against each single
signal (``BEHIND`` where it trails one).

``--approximate-from 1`` sends every vector search through the embedded store's
HNSW graph (candidates scored exactly), as collections past
``HIPPO_APPROXIMATE_FROM`` vectors search, to compare with exact search.

``--text-candidates-from 1`` sends every text search through tantivy's
candidates (scored exactly), as collections past ``HIPPO_TEXT_CANDIDATES_FROM``
memories search, to compare with BM25 over every matching memory.

``--cache DIR`` keeps the embeddings of passages and questions on disk between
runs (keyed by the model and the exact text), so a second run measures ranking
changes in a fraction of the time. Leave it out for a measurement from scratch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hippocampus.embed import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.retrieve.config import DEFAULT_RECIPE, RECIPES
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.index_ann import APPROXIMATE_FROM
from hippocampus.store.embedded.text_candidates import CANDIDATES_FROM


@dataclass
class Question:
    text: str
    gold: set[str]  # memory ids
    kind: str = "all"


@dataclass
class Corpus:
    """One collection's memories, in the order they are remembered."""

    collection: str
    memories: list[NewMemory]
    questions: list[Question]


@dataclass
class Dataset:
    name: str
    corpora: list[Corpus]
    ks: tuple[int, int]  # the two cut-offs reported; All@ uses the larger
    by_kind: bool = False
    notes: list[str] = field(default_factory=list)


def load_musique(folder: Path, max_chars: int) -> Dataset:
    corpus = json.loads((folder / "musique_train_corpus.json").read_text())
    passages = [(p["title"], p["text"]) for p in corpus]
    index = {p: f"p{i}" for i, p in enumerate(passages)}
    questions = [
        Question(
            q["question"],
            {
                index[(p["title"], p["paragraph_text"])]
                for p in q["paragraphs"]
                if p["is_supporting"]
            },
        )
        for q in json.loads((folder / "musique_train.json").read_text())
    ]
    return Dataset("musique", [_passages("bench:musique", passages, questions)], (2, 5))


def load_hotpotqa(folder: Path, max_chars: int) -> Dataset:
    corpus = json.loads((folder / "hotpotqa_train_corpus.json").read_text())
    passages = [(title, "".join(sentences)) for title, sentences in corpus.items()]
    index = {title: f"p{i}" for i, (title, _) in enumerate(passages)}
    questions = [
        Question(q["question"], {index[title] for title, _ in q["supporting_facts"]})
        for q in json.loads((folder / "hotpotqa_train.json").read_text())
    ]
    return Dataset("hotpotqa", [_passages("bench:hotpotqa", passages, questions)], (2, 5))


def _passages(collection: str, passages: list[tuple[str, str]], qs: list[Question]) -> Corpus:
    memories = [
        NewMemory(content=f"{title}\n{text}", id=f"p{i}", category="documentation")
        for i, (title, text) in enumerate(passages)
    ]
    return Corpus(collection, memories, qs)


_SPEAKER = re.compile(r"^(User|Assistant):\s*")


def load_beam(folder: Path, max_chars: int) -> Dataset:
    data = json.loads((folder / "beam-100k.json").read_text())
    corpora = []
    cut = 0
    for group in data["groups"]:
        memories = []
        day_counts: dict[str, int] = defaultdict(int)
        for unit in group["units"]:
            text = unit["text"]
            if len(text) > max_chars:
                text, cut = text[:max_chars], cut + 1
            speaker = _SPEAKER.match(text)
            # Messages of one batch share a date; keep their order within it.
            day = datetime.fromisoformat(unit["time"]).replace(tzinfo=UTC)
            at = day + timedelta(minutes=day_counts[unit["time"]])
            day_counts[unit["time"]] += 1
            memories.append(
                NewMemory(
                    content=text,
                    id=unit["key"],
                    category="conversation",
                    conversation_id=group["id"],
                    **_when_who(at, speaker.group(1).lower() if speaker else None),
                )
            )
        questions = [
            Question(q["question"], set(q["gold"]), q["category"]) for q in group["questions"]
        ]
        corpora.append(Corpus(f"bench:beam:{group['id']}", memories, questions))
    notes = [f"{cut} messages cut to {max_chars} characters"] if cut else []
    return Dataset("beam", corpora, (5, 10), by_kind=True, notes=notes)


def _when_who(at: datetime, speaker: str | None) -> dict[str, Any]:
    """The time and speaker fields, where this version of the engine has them."""
    fields = NewMemory.model_fields
    out: dict[str, Any] = {}
    if "occurred_at" in fields:
        out["occurred_at"] = at
    if "speaker" in fields and speaker is not None:
        out["speaker"] = speaker
    return out


LOADERS = {
    "musique": ("musique-100", load_musique),
    "hotpotqa": ("hotpotqa-100", load_hotpotqa),
    "beam": ("beam-100k", load_beam),
}


class CachedEmbedder:
    """An embedder whose vectors are kept on disk by model and text (bench only)."""

    def __init__(self, inner: Embedder, folder: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', inner.name)}.npz"
        self.vectors: dict[str, npt.NDArray[np.float32]] = {}
        if self.path.exists():
            with np.load(self.path) as stored:
                self.vectors = {k: stored[k] for k in stored.files}
        self.dirty = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors})
        if todo:
            by_key = {k: t for k, t in zip(keys, texts, strict=True)}
            fresh = self.inner.encode([by_key[k] for k in todo])
            self.vectors.update(zip(todo, fresh, strict=True))
            self.dirty = True
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if self.dirty:
            np.savez(self.path, **self.vectors)
            self.dirty = False


def index_corpus(service: Hippocampus, corpus: Corpus) -> None:
    batch = 128
    for start in range(0, len(corpus.memories), batch):
        service.remember_many(corpus.collection, corpus.memories[start : start + batch])


def noisy(
    vectors: npt.NDArray[np.float32], sigma: float, rng: np.random.Generator
) -> npt.NDArray[np.float32]:
    """Unit vectors plus Gaussian noise of norm about ``sigma``, back at unit length
    (the vectors as they are for ``sigma`` 0)."""
    if sigma <= 0.0 or len(vectors) == 0:
        return vectors
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    shaken = unit + sigma * rng.standard_normal(unit.shape) / np.sqrt(unit.shape[1])
    out: npt.NDArray[np.float32] = (shaken / np.linalg.norm(shaken, axis=1, keepdims=True)).astype(
        np.float32
    )
    return out


def evaluate(
    service: Hippocampus,
    data: Dataset,
    methods: list[str],
    *,
    dense_noise: float = 0.0,
    seed: int = 7,
) -> dict[str, dict[str, dict[str, float]]]:
    """Per method, per question kind ("all" included): mean R@k for both cut-offs,
    All@ the larger, and the question count. ``dense_noise``: see the module's
    doc; every method sees the same noisy vectors."""
    small, large = data.ks
    out: dict[str, dict[str, dict[str, float]]] = {}
    for method in methods:
        sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for i, corpus in enumerate(data.corpora):
            vectors = noisy(
                service.embedder.encode([q.text for q in corpus.questions]),
                dense_noise,
                np.random.default_rng([seed, i]),
            )
            for q, vector in zip(corpus.questions, vectors, strict=True):
                result = service.recall(
                    corpus.collection,
                    q.text,
                    limit=large,
                    query_vector=vector,
                    recipe=method,
                    learn=False,
                )
                ranked = [h.memory.id for h in result.hits]
                found_small = len(q.gold & set(ranked[:small]))
                found_large = len(q.gold & set(ranked[:large]))
                for kind in ("all", q.kind) if data.by_kind else ("all",):
                    row = sums[kind]
                    row[f"r{small}"] += found_small / len(q.gold)
                    row[f"r{large}"] += found_large / len(q.gold)
                    row[f"all{large}"] += 1.0 if found_large == len(q.gold) else 0.0
                    row["n"] += 1
        out[method] = {
            kind: {key: (v if key == "n" else v / row["n"]) for key, v in row.items()}
            for kind, row in sums.items()
        }
    return out


def dataset_names(parser: argparse.ArgumentParser, given: str) -> list[str]:
    """The data sets a comma-separated ``--datasets`` names; an unknown one is a
    usage error."""
    names = [d for d in given.split(",") if d]
    if bad := [d for d in names if d not in LOADERS]:
        parser.error(f"unknown data sets: {bad}; known: {', '.join(LOADERS)}")
    return names


def bench_embedder(kind: str, cache: Path | None) -> Embedder:
    """The ``--embedder`` (``minilm`` or ``hashing``), its embeddings kept in
    ``cache`` between runs when one is given."""
    inner: Embedder = SentenceTransformerEmbedder() if kind == "minilm" else HashingEmbedder()
    return CachedEmbedder(inner, cache) if cache else inner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with the data sets")
    parser.add_argument("--datasets", default="musique,hotpotqa,beam")
    parser.add_argument(
        "--methods", default=",".join(["default", *RECIPES]), help="recipe names, or default"
    )
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--cache", type=Path, help="keep embeddings in this folder between runs")
    parser.add_argument(
        "--keep",
        type=Path,
        help="index into this folder and keep it; a later run given the same folder reuses "
        "the collections already there (for trying ranking changes; index anew after "
        "changing how memories are stored)",
    )
    parser.add_argument(
        "--dense-noise",
        type=float,
        default=0.0,
        metavar="SIGMA",
        help="perturb the question vectors so similarity is a weak guide (see above)",
    )
    parser.add_argument("--seed", type=int, default=7, help="the draw of --dense-noise")
    parser.add_argument(
        "--approximate-from",
        type=int,
        default=APPROXIMATE_FROM,
        help="vectors from which a collection's searches go through its HNSW graph "
        "(default %(default)s; 1: every search, to compare with exact search)",
    )
    parser.add_argument(
        "--text-candidates-from",
        type=int,
        default=CANDIDATES_FROM,
        help="memories from which a collection's text searches take tantivy's candidates "
        "(default %(default)s; 1: every search, to compare with exact BM25)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--markdown", action="store_true", help="print the tables as the README has them"
    )
    args = parser.parse_args(argv)
    if args.dense_noise < 0.0:
        parser.error("--dense-noise must be 0 or more")
    methods = [DEFAULT_RECIPE if m == "default" else m.upper() for m in args.methods.split(",")]
    unknown = [m for m in methods if m not in RECIPES]
    if unknown:
        parser.error(f"unknown recipes: {unknown}; known: {', '.join(RECIPES)}")
    methods = list(dict.fromkeys(methods))
    names = dataset_names(parser, args.datasets)
    embedder = bench_embedder(args.embedder, args.cache)
    extractor = SpacyConceptExtractor()
    results: dict[str, Any] = {}
    datasets: list[Dataset] = []
    for name in names:
        folder, loader = LOADERS[name]
        with tempfile.TemporaryDirectory(prefix="hippo-quality-") as tmp:
            where = args.keep / name if args.keep else Path(tmp)
            store = EmbeddedStore(
                where,
                approximate_from=args.approximate_from,
                text_candidates_from=args.text_candidates_from,
            )
            service = Hippocampus(store, embedder, extractor)
            try:
                data = loader(args.data / folder, service.limits.max_content_chars)
                datasets.append(data)
                t0 = time.perf_counter()
                known = set(service.store.list_collections()) if args.keep else set()
                for corpus in data.corpora:
                    if corpus.collection not in known:
                        index_corpus(service, corpus)
                    # Every vector in its graph, and every text in tantivy, before a
                    # question is asked.
                    store.wait_for_graphs(corpus.collection)
                    store.wait_for_text_candidates(corpus.collection)
                t1 = time.perf_counter()
                if isinstance(embedder, CachedEmbedder):
                    embedder.save()
                results[name] = evaluate(
                    service, data, methods, dense_noise=args.dense_noise, seed=args.seed
                )
                t2 = time.perf_counter()
            finally:
                service.close()
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
        n_memories = sum(len(c.memories) for c in data.corpora)
        n_questions = sum(len(c.questions) for c in data.corpora)
        print(
            f"{name}: {n_memories} memories indexed in {t1 - t0:.1f} s, "
            f"{n_questions} questions x {len(methods)} recipes in {t2 - t1:.1f} s"
            + "".join(f"; {note}" for note in data.notes),
            file=sys.stderr,
        )

    if args.json:
        print(json.dumps(results))
        return 0
    if args.markdown:
        print(_markdown(datasets, results, methods))
        return 0
    noise = f", question vectors with noise {args.dense_noise:g}" if args.dense_noise else ""
    print(f"retrieval quality ({embedder.name}, default recipe {DEFAULT_RECIPE}{noise})")
    for data in datasets:
        _print_table(data, results[data.name], methods)
    print()
    for data in datasets:
        print(_against_single_signals(data, results[data.name], methods))
    return 0


SINGLE_SIGNALS = ("DENSE", "BM25")


def _against_single_signals(data: Dataset, by_method: dict[str, Any], methods: list[str]) -> str:
    """The default's R@ the larger cut-off against each single signal's: a default
    that loses to one of its own signals has a fusion to fix."""
    large = data.ks[1]
    if DEFAULT_RECIPE not in methods:
        return f"{data.name}: the default was not run"
    own = by_method[DEFAULT_RECIPE]["all"][f"r{large}"]
    cells = []
    for single in (m for m in SINGLE_SIGNALS if m in methods):
        theirs = by_method[single]["all"][f"r{large}"]
        verdict = "ahead of" if own >= theirs else "BEHIND"
        cells.append(f"{verdict} {single} by {abs(own - theirs):.3f}")
    return f"{data.name} R@{large}: default {own:.3f}, " + ", ".join(
        cells or ["no single signal run"]
    )


def _print_table(data: Dataset, by_method: dict[str, Any], methods: list[str]) -> None:
    small, large = data.ks
    print(f"\n{data.name}: R@{small} / R@{large} / All@{large}")
    print(f"{'recipe':<15} {'R@' + str(small):>6} {'R@' + str(large):>6} {'All@' + str(large):>6}")
    for method in methods:
        s = by_method[method]["all"]
        print(
            f"{method:<15} {s[f'r{small}']:>6.3f} {s[f'r{large}']:>6.3f} {s[f'all{large}']:>6.3f}"
        )
    if not data.by_kind:
        return
    kinds = sorted(k for k in by_method[methods[0]] if k != "all")
    print(f"\n{data.name} R@{large} by question type")
    print(f"{'type':<26} {'n':>3} " + " ".join(f"{m[:12]:>12}" for m in methods))
    for kind in kinds:
        n = int(by_method[methods[0]][kind]["n"])
        cells = " ".join(f"{by_method[m][kind][f'r{large}']:>12.3f}" for m in methods)
        print(f"{kind:<26} {n:>3} {cells}")


TITLES = {"musique": "MuSiQue-100", "hotpotqa": "HotpotQA-100", "beam": "beam-100k"}


def _markdown(datasets: list[Dataset], results: dict[str, Any], methods: list[str]) -> str:
    """One table of every data set's headline figure per recipe, then beam's types."""
    names = [f"`{m}`" + (" (default)" if m == DEFAULT_RECIPE else "") for m in methods]
    lines = [
        "| | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for data in datasets:
        small, large = data.ks
        for k in (small, large):
            cells = [f"{results[data.name][m]['all'][f'r{k}']:.3f}" for m in methods]
            title = TITLES.get(data.name, data.name)
            lines.append(f"| {title} R@{k} | " + " | ".join(cells) + " |")
    for data in datasets:
        if not data.by_kind:
            continue
        large = data.ks[1]
        by_method = results[data.name]
        kinds = sorted(k for k in by_method[methods[0]] if k != "all")
        lines += ["", f"{TITLES.get(data.name, data.name)}, R@{large} by question type:", ""]
        lines.append("| type (questions) | " + " | ".join(f"`{m}`" for m in methods) + " |")
        lines.append("|---|" + "---|" * len(methods))
        for kind in kinds:
            n = int(by_method[methods[0]][kind]["n"])
            cells = [f"{by_method[m][kind][f'r{large}']:.3f}" for m in methods]
            lines.append(f"| {kind.replace('_', ' ')} ({n}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
