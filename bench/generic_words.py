"""Which words are too generic to be a hub: measured on the dev sets.

A trigger (or a one-word concept) links every memory of a collection that
says it. A word said in every kind of text links memories that share nothing
but the word (``use``, ``change``, ``step``): a researcher reads noise in the
drawing, and in a small collection, where no hub's degree is high, the walk
crosses it as if it meant something. So a word is *generic* when it is a hub
of at least ``--min-share`` (1%) of a collection's memories either

- in each of the three dev sets, sets of opposite kinds (beam-100k's chats,
  the mean over its 20 chats, each one collection; MuSiQue's and HotpotQA's
  Wikipedia passages, one collection each): common in every kind of text; or
- in at least ``--coverage`` (three quarters) of the 22 collections those
  sets make: common in nearly any collection, whatever it is about.

A word common in one kind of text only, or in a few collections (``album`` on
Wikipedia, ``triangle`` in one chat about geometry), says something about its
memories and stays. Names are never generic, and spaCy's stop words (compared
by lemma, so ``owns`` is the stop word ``own``) are left out before measuring.

The same measure picks the domain cues that are *ambiguous alone*: a cue
(:data:`hippocampus.extract.domains.DOMAIN_CUES`) that at least ``--cue-share``
(0.5%) of the Wikipedia passages say, though none of them is about software
(``support``, ``team``, ``model``), names a domain only beside a second cue.

    .venv/bin/python bench/generic_words.py --data ../shared/data
    .venv/bin/python bench/generic_words.py --data ../shared/data --python

``--python`` prints the two word lists as the engine's source holds them
(``engine/extract/generic.py``, ``engine/extract/domains.py``): the engine's
lists are this script's output.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quality import LOADERS, Dataset
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.domains import DOMAIN_CUES
from hippocampus.extract.turns import said

MAX_CHARS = 8000
"""Content past the engine's cap is cut there, as the quality bench cuts it."""


def hub_words(extractor: SpacyConceptExtractor, texts: Sequence[str]) -> list[set[str]]:
    """Per text, its triggers and one-word concepts (the hubs a stop list can keep
    a word out of; names are never generic and are left out)."""
    out = []
    for x in extractor.extract_many(list(texts)):
        names = set(x.names)
        out.append(
            {t for t in x.triggers if " " not in t}
            | {c for c in x.concepts if " " not in c and c not in names}
        )
    return out


def shares(per_text: Iterable[set[str]]) -> dict[str, float]:
    """The share of texts that have each word."""
    counts: Counter[str] = Counter()
    n = 0
    for words in per_text:
        counts.update(words)
        n += 1
    return {w: c / n for w, c in counts.items()} if n else {}


def collection_shares(extractor: SpacyConceptExtractor, data: Dataset) -> list[dict[str, float]]:
    """Per collection of the dataset (one for a passage set, one per chat for
    beam-100k), each word's share of its memories."""
    return [
        shares(hub_words(extractor, [said(m.content) for m in corpus.memories]))
        for corpus in data.corpora
    ]


def common_in_every_set(
    by_dataset: dict[str, list[dict[str, float]]], min_share: float
) -> set[str]:
    """Words whose share, averaged over a dataset's collections, is at least
    ``min_share`` in every dataset."""
    means = [
        {w: sum(c.get(w, 0.0) for c in found) / len(found) for w in set().union(*found)}
        for found in by_dataset.values()
    ]
    return {
        w
        for w in set.intersection(*(set(m) for m in means))
        if min(m[w] for m in means) >= min_share
    }


def common_in_most_collections(
    collections: Sequence[dict[str, float]], min_share: float, coverage: float
) -> set[str]:
    """Words that at least ``min_share`` of a collection's memories have, in at
    least ``coverage`` of the collections."""
    counts: Counter[str] = Counter()
    for found in collections:
        counts.update(w for w, share in found.items() if share >= min_share)
    return {w for w, n in counts.items() if n >= coverage * len(collections)}


def generic_words(
    by_dataset: dict[str, list[dict[str, float]]], min_share: float, coverage: float
) -> list[str]:
    """The generic words: common in every set, or in most collections."""
    everywhere = [c for found in by_dataset.values() for c in found]
    return sorted(
        common_in_every_set(by_dataset, min_share)
        | common_in_most_collections(everywhere, min_share, coverage)
    )


def cue_shares(extractor: SpacyConceptExtractor, texts: Sequence[str]) -> dict[str, float]:
    """The share of ``texts`` that say each domain cue, in the words the extractor
    matches cues against."""
    cues = set().union(*DOMAIN_CUES.values())
    return shares({w for w in words if w in cues} for words in extractor.words_of(texts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with the data sets")
    parser.add_argument("--min-share", type=float, default=0.01)
    parser.add_argument("--coverage", type=float, default=0.75)
    parser.add_argument("--cue-share", type=float, default=0.005)
    parser.add_argument("--python", action="store_true", help="print the lists as source")
    args = parser.parse_args(argv)
    extractor = SpacyConceptExtractor(generic=())
    by_dataset: dict[str, list[dict[str, float]]] = {}
    wiki: list[str] = []
    for name, (folder, loader) in LOADERS.items():
        data = loader(args.data / folder, MAX_CHARS)
        by_dataset[name] = collection_shares(extractor, data)
        if name != "beam":
            wiki += [m.content for c in data.corpora for m in c.memories]
    generic = generic_words(by_dataset, args.min_share, args.coverage)
    cue_share = cue_shares(extractor, wiki)
    ambiguous = sorted(c for c, s in cue_share.items() if s >= args.cue_share)
    if args.python:
        print(f"GENERIC_WORDS = {_words(generic)}")
        print(f"AMBIGUOUS_CUES = {_words(ambiguous)}")
        return 0
    everywhere = [c for found in by_dataset.values() for c in found]
    print(
        f"generic words: a hub of >= {args.min_share:.0%} of a collection's memories in each "
        f"set (mean over its collections), or in >= {args.coverage:.0%} of the "
        f"{len(everywhere)} collections"
    )
    print(f"{'word':<14}" + "".join(f"{n:>10}" for n in by_dataset) + f"{'colls':>8}")
    for word in generic:
        means = [sum(c.get(word, 0.0) for c in found) / len(found) for found in by_dataset.values()]
        held = sum(1 for c in everywhere if c.get(word, 0.0) >= args.min_share)
        print(f"{word:<14}" + "".join(f"{m:>10.3f}" for m in means) + f"{held:>8}")
    print(f"\nambiguous cues: said by >= {args.cue_share:.1%} of {len(wiki)} Wikipedia passages")
    for cue in sorted(ambiguous, key=lambda c: -cue_share[c]):
        domains = ", ".join(d for d, cues in DOMAIN_CUES.items() if cue in cues)
        print(f"{cue:<14}{cue_share[cue]:>8.3f}  {domains}")
    return 0


def _words(words: list[str]) -> str:
    body = textwrap.fill(" ".join(words), width=92, initial_indent="    ", subsequent_indent="    ")
    return f'frozenset(\n    """\n{body}\n    """.split()\n)'


if __name__ == "__main__":
    raise SystemExit(main())
