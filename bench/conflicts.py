"""False conflicts: how often remembering would call near-duplicates contradictory.

Remembering compares a new memory with its nearest stored ones and flags the
pairs where one takes back what the other says (:func:`hippocampus.extract.dedup.
compare`, :mod:`hippocampus.extract.reversal`). The dev sets hold no such pairs on
purpose, only passages and chat turns that repeat, paraphrase or elaborate one
another: every pair flagged among them is a false conflict, or a real reversal
a reader would call one (the beam chats hold a few "knowledge update" turns),
and ``--show`` prints them to be read.

Per data set, in each collection (the memories as bench/quality.py remembers
them; vectors as the service makes them, by the first passage of the content
without its speaker label), three sets of pairs are compared:

- near-duplicates: pairs dedup calls alike (cosine above 0.95, or both short
  and sharing most words: ``DedupConfig``), said by the same side;
- close: the other pairs of cosine 0.85 and more, said by the same side;
- compared: each memory with its 5 nearest earlier memories of its side (what
  remembering compares it with, by vector).

    .venv/bin/python bench/conflicts.py --data ../shared/data --cache /tmp/hippo-vectors
    .venv/bin/python bench/conflicts.py --data ../shared/data --datasets beam --show 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality import LOADERS, CachedEmbedder, Corpus, bench_embedder, dataset_names
from hippocampus.config import Limits
from hippocampus.embed import Embedder
from hippocampus.embed.passages import passages
from hippocampus.extract.dedup import NEGATIONS, DedupConfig, Verdict, compare, jaccard, tokens
from hippocampus.extract.turns import said

CLOSE = 0.85
"""The least cosine of a "close" pair."""
NEIGHBOURS = 5
"""Earlier memories each one is compared with (``DedupConfig.candidates``)."""
BANDS = ("near-duplicates", "close", "compared")


@dataclass
class Tally:
    pairs: int = 0
    flagged: int = 0
    examples: list[tuple[float, str, str, list[str]]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.flagged / self.pairs if self.pairs else 0.0


def heads(embedder: Embedder, corpus: Corpus, limits: Limits) -> npt.NDArray[np.float32]:
    """Unit vectors of each memory as the service embeds it: its first passage,
    without a speaker label."""
    texts = []
    for m in corpus.memories:
        text = said(m.content)
        start, end = passages(text, limits.passage_chars, limits.passage_overlap)[0]
        texts.append(text[start:end])
    vectors = np.asarray(embedder.encode(texts), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: npt.NDArray[np.float32] = vectors / np.maximum(norms, 1e-12)
    return out


def _alike_by_words(a: str, b: str, config: DedupConfig) -> bool:
    ta, tb = tokens(a), tokens(b)
    if max(len(ta), len(tb)) > config.short_tokens:
        return False
    plain_a = {w for w in ta if w not in NEGATIONS}
    plain_b = {w for w in tb if w not in NEGATIONS}
    return jaccard(plain_a, plain_b) > config.jaccard


def measure(
    corpus: Corpus, vectors: npt.NDArray[np.float32], config: DedupConfig
) -> dict[str, Tally]:
    """The three sets of pairs of one collection, each with what was flagged."""
    out = {band: Tally() for band in BANDS}
    memories = corpus.memories
    sims = vectors @ vectors.T
    n = len(memories)
    sides = [(m.speaker or "").casefold() for m in memories]
    words: dict[int, set[int]] = {}  # short memories' word ids, for the Jaccard test
    vocabulary: dict[str, int] = {}
    for i, m in enumerate(memories):
        ts = tokens(m.content)
        if len(ts) <= config.short_tokens:
            words[i] = {vocabulary.setdefault(t, len(vocabulary)) for t in ts}

    def judge(band: str, i: int, j: int) -> None:
        # i is the later memory: it is the one being remembered.
        similarity = float(sims[i, j])
        verdict = compare(memories[i].content, memories[j].content, similarity, config)
        tally = out[band]
        tally.pairs += 1
        if verdict.verdict == Verdict.CONFLICT:
            tally.flagged += 1
            tally.examples.append(
                (similarity, memories[j].content, memories[i].content, sorted(verdict.contested))
            )

    for i in range(n):
        for j in range(i):
            if sides[i] != sides[j]:
                continue
            s = float(sims[i, j])
            alike = s > config.similarity
            if not alike and i in words and j in words and len(words[i] & words[j]) > 0:
                alike = _alike_by_words(memories[i].content, memories[j].content, config)
            if alike:
                judge("near-duplicates", i, j)
            elif s >= CLOSE:
                judge("close", i, j)
    for i in range(1, n):
        earlier = [j for j in range(i) if sides[j] == sides[i]]
        if not earlier:
            continue
        row = sims[i, earlier]
        for k in np.argsort(-row)[:NEIGHBOURS]:
            judge("compared", i, earlier[int(k)])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with the data sets")
    parser.add_argument("--datasets", default="musique,hotpotqa,beam")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--cache", type=Path, help="keep embeddings in this folder between runs")
    parser.add_argument("--show", type=int, default=0, help="print this many flagged pairs per set")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    names = dataset_names(parser, args.datasets)
    embedder = bench_embedder(args.embedder, args.cache)
    limits = Limits()
    config = DedupConfig()
    results: dict[str, dict[str, Tally]] = {}
    for name in names:
        folder, loader = LOADERS[name]
        data = loader(args.data / folder, limits.max_content_chars)
        t0 = time.perf_counter()
        totals = {band: Tally() for band in BANDS}
        for corpus in data.corpora:
            found = measure(corpus, heads(embedder, corpus, limits), config)
            for band, tally in found.items():
                totals[band].pairs += tally.pairs
                totals[band].flagged += tally.flagged
                totals[band].examples.extend(tally.examples)
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
        results[name] = totals
        print(f"{name}: measured in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        band: {"pairs": t.pairs, "flagged": t.flagged, "rate": round(t.rate, 4)}
                        for band, t in by_band.items()
                    }
                    for name, by_band in results.items()
                }
            )
        )
        return 0
    print(f"false conflicts on the dev sets ({embedder.name})")
    print(f"{'set':<10} {'pairs':<16} {'compared':>9} {'flagged':>8} {'rate':>7}")
    for name, by_band in results.items():
        for band, t in by_band.items():
            print(f"{name:<10} {band:<16} {t.pairs:>9} {t.flagged:>8} {t.rate:>7.1%}")
    for name, by_band in results.items():
        shown = sorted((e for t in by_band.values() for e in t.examples), key=lambda e: -e[0])[
            : args.show
        ]
        for similarity, older, newer, contested in shown:
            print(f"\n{name} cos {similarity:.3f} on {', '.join(contested)}")
            print(f"  older: {_clip(older)}")
            print(f"  newer: {_clip(newer)}")
    return 0


def _clip(text: str, width: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


if __name__ == "__main__":
    sys.exit(main())
