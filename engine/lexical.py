"""Lexical relevance: a tokenizer for English technical text and an incremental BM25 index.

Pure and in memory: the embedded store keeps one :class:`BM25Index` per collection
over memory content and rebuilds it from SQLite at start; nothing here does I/O.

Scoring is Okapi BM25 with the non-negative IDF used by Lucene,

    idf(t)  = ln(1 + (N - df + 0.5) / (df + 0.5))
    w(t, d) = idf(t) · tf · (k1 + 1) / (tf + k1 · (1 - b + b · |d| / avgdl))

summed over the distinct terms of the query. ``N`` counts every document added
(also those with no terms left after tokenizing), ``|d|`` is the number of terms
of ``d`` and ``avgdl`` their mean over all documents. Every weight is positive,
so a document scores above zero exactly when it shares a term with the query.
"""

from __future__ import annotations

import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from functools import lru_cache
from itertools import compress
from typing import Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["K1", "STOP_WORDS", "B", "BM25Index", "bm25_score", "stem", "tokenize"]

K1 = 1.2
"""BM25's term-frequency saturation (Lucene's default)."""
B = 0.75
"""BM25's length normalization (Lucene's default)."""

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him himself
    his how i if in into is it its itself just me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves
    d ll m re s t ve
    """.split()
)
"""English function words dropped by :func:`tokenize`, compared before stemming.
Compact on purpose: words such as "error", "not found" or "before" carry meaning in
engineering notes only in phrases BM25 cannot see, and rare words cost nothing."""

# Runs of letters and digits: \w without the underscore, so snake_case, kebab-case
# and dotted.names split into their words.
_WORD = re.compile(r"[^\W_]+")
_VOWELS = frozenset("aeiouy")
# Double letters kept when a suffix is stripped ("installing" -> "install").
_KEEP_DOUBLE = frozenset("lsz")
_STEM_CACHE_SIZE = 1 << 16

DocFilter: TypeAlias = Callable[[str], bool] | Set[str]
"""Which documents a search may return: a predicate on the id, or a set of ids.
A predicate with a ``many`` method (ids in, one bool per id out: see
:class:`ManyFilter`) is asked a band of candidates at once."""


class ManyFilter(Protocol):
    """A predicate on document ids that also answers many ids in one call."""

    def __call__(self, doc_id: str) -> bool: ...

    def many(self, doc_ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Whether each of ``doc_ids`` passes, in order."""
        ...


_Scores = npt.NDArray[np.float64]
_Nums = npt.NDArray[np.intp]


def stem(word: str) -> str:
    """A light, deterministic English stem of one case-folded word.

    Strips plural and ``-ing`` / ``-ed`` endings and a final ``e``, so that the
    forms of one word meet: "timeouts" -> "timeout", "queries" / "queried" ->
    "query", "caches" / "cached" / "caching" -> "cach", "running" -> "run".
    Words of three letters or less, and words with anything but ASCII letters
    (numbers, versions, other scripts), are returned unchanged.

    Args:
        word: one token, already case-folded.

    Returns:
        The stem; never empty.
    """
    if len(word) <= 3 or not (word.isascii() and word.isalpha()):
        return word
    # Plurals: "queries" -> "query", "classes" -> "class", "timeouts" -> "timeout";
    # "status", "class" and "analysis" are not plurals.
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word[-1] == "s" and word[-2] not in "siu":
        word = word[:-1]
    # Past tense and gerund: "queried" -> "query", "stopped" -> "stop", "running" -> "run".
    # A stem needs a vowel and three letters, so "string", "thing" and "need" stay.
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") or (word.endswith("ed") and not word.endswith("eed")):
        base = word[:-3] if word[-1] == "g" else word[:-2]
        if len(base) >= 3 and not _VOWELS.isdisjoint(base):
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in _KEEP_DOUBLE:
                base = base[:-1]
            word = base
    # A final e joins "cache" with "cached" / "caching" and "configure" with
    # "configured"; "use" and "tie" are too short to lose it.
    if word[-1] == "e" and len(word) > 3:
        word = word[:-1]
    return word


@lru_cache(maxsize=_STEM_CACHE_SIZE)
def _term(word: str) -> str | None:
    """The indexed term of one word, ``None`` for a stop word. Cached: a corpus
    repeats a small vocabulary, so most words cost one dictionary lookup."""
    if word in STOP_WORDS:
        return None
    return stem(word)


def tokenize(text: str) -> list[str]:
    """The terms BM25 indexes for ``text``, in order, repeats kept.

    Unicode NFKC, case-folded, split on anything that is not a letter or digit
    ("person-centered" -> "person", "center"; "orders.customer_id" -> "order",
    "customer", "id"), English stop words dropped, each word stemmed by
    :func:`stem`.

    Args:
        text: any text.

    Returns:
        The terms; empty when nothing but stop words and punctuation remains.
    """
    # ASCII is already in NFKC form; skipping the call saves most of its cost.
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    # map() keeps the per-word loop in C; stems are never empty, so falsy means stop word.
    return [term for term in map(_term, _WORD.findall(text.casefold())) if term]


def bm25_score(
    tfs: Sequence[int],
    dfs: Sequence[int],
    length: int,
    n: int,
    total_length: int,
    *,
    k1: float = K1,
    b: float = B,
) -> float:
    """One document's BM25 score, computed as :class:`BM25Index` computes it, to the
    last bit, from statistics kept elsewhere (the Neo4j store keeps them beside
    its full-text index).

    Args:
        tfs: how often each distinct query term occurs in the document, in the
            query's order.
        dfs: how many documents hold each of those terms.
        length: the document's number of terms.
        n: the number of documents.
        total_length: the number of terms of all documents (``avgdl`` is
            ``total_length / n``).
        k1: term-frequency saturation.
        b: length normalization.

    Returns:
        The score; 0.0 when the document shares no term with the query.
    """
    norm = k1 * (1.0 - b + b * (length / (total_length / n)))
    score = 0.0
    # Term by term, in query order, with the index's expression: float addition
    # is not associative, and the stores must agree to the last bit.
    for tf, df in zip(tfs, dfs, strict=True):
        if tf and df:
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            score += idf * (k1 + 1.0) * float(tf) / (float(tf) + norm)
    return score


class _Postings:
    """The documents of one term: parallel growable arrays of doc numbers and term
    frequencies, unordered. ``array.array`` appends cost about what a list's do and
    the arrays copy into numpy with one memcpy at query time."""

    __slots__ = ("docs", "tfs")

    def __init__(self) -> None:
        # 32-bit entries: half the memory of Python's default 64-bit, and a doc
        # number or a term frequency never comes near 2**31.
        self.docs = array("i")
        self.tfs = array("i")

    def discard(self, doc: int) -> None:
        # Swap with the last entry: order carries no meaning, and removal stays
        # O(df) in C instead of shifting the tail.
        docs = self.docs
        at = int(np.flatnonzero(np.frombuffer(docs, dtype=np.intc) == doc)[0])
        last = len(docs) - 1
        if at != last:
            docs[at] = docs[last]
            self.tfs[at] = self.tfs[last]
        docs.pop()
        self.tfs.pop()

    def __len__(self) -> int:
        return len(self.docs)


class BM25Index:
    """An incremental Okapi BM25 index over short documents, by string id.

    Adding, removing and replacing a document keep every statistic exact (``N``,
    document frequencies, the total length behind ``avgdl``): an index built by
    any sequence of updates scores exactly like one built from scratch over the
    documents it holds, to the last bit (a document's terms are summed in query
    order, whatever its number).

    Documents get small integer numbers (reused after removal) so that a search
    accumulates scores in one dense numpy array: for each query term, one gather
    of the documents' length norms and one scatter-add of their weights.

    Searches may run side by side (the one thing they write, a cache of length
    norms, is replaced whole); a write needs the index to itself. The embedded
    store wraps each collection's index in a readers-writer lock.
    """

    def __init__(
        self,
        *,
        k1: float = K1,
        b: float = B,
        tokenizer: Callable[[str], list[str]] = tokenize,
    ) -> None:
        """An empty index.

        Args:
            k1: term-frequency saturation; 0 scores presence only.
            b: length normalization, from 0 (none) to 1 (full).
            tokenizer: text to terms, for documents and queries alike.

        Raises:
            ValueError: ``k1`` negative or ``b`` outside [0, 1].
        """
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._num_of: dict[str, int] = {}
        self._ids: list[str] = []  # doc number -> id; "" for a free number
        self._free: list[int] = []
        # doc number -> the doc's terms in order: what removal must unindex, and what
        # tells replace() that content is unchanged. A tuple of shared term strings
        # weighs a fifth of a dict of counts.
        self._terms: list[tuple[str, ...] | None] = []
        self._lengths = array("d")  # doc number -> terms in the doc
        self._postings: dict[str, _Postings] = {}
        self._total_length = 0
        # k1 · (1 - b + b · |d| / avgdl) per doc number: depends on avgdl, so any
        # write invalidates it; searches between writes share one computation.
        self._norms: _Scores | None = None

    # -- reading --------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._num_of)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._num_of

    def ids(self) -> set[str]:
        """The documents indexed."""
        return set(self._num_of)

    @property
    def avgdl(self) -> float:
        """Mean document length in terms (0.0 when empty)."""
        return self._total_length / len(self._num_of) if self._num_of else 0.0

    def df(self, term: str) -> int:
        """How many documents hold ``term`` (an already tokenized term)."""
        postings = self._postings.get(term)
        return len(postings) if postings is not None else 0

    def idf(self, term: str) -> float:
        """``ln(1 + (N - df + 0.5) / (df + 0.5))`` of an already tokenized term."""
        df = self.df(term)
        return math.log1p((len(self._num_of) - df + 0.5) / (df + 0.5))

    def terms_of(self, doc_id: str) -> tuple[str, ...] | None:
        """The indexed terms of a document, in order; ``None`` when not indexed."""
        num = self._num_of.get(doc_id)
        return self._terms[num] if num is not None else None

    def search(
        self, query: str, k: int, allowed: DocFilter | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` documents most relevant to ``query``.

        Args:
            query: free text, tokenized like the documents; each distinct term
                counts once.
            k: how many results at most.
            allowed: the documents that may be returned: a set of ids, or a
                predicate on ids; ``None`` allows all. A predicate is called on
                candidates best first, in growing batches, until ``k`` pass: cheap
                when most documents pass, up to one call per matching document
                when almost none do.

        Returns:
            ``(doc_id, score)`` pairs, best first, ties broken by ascending id;
            only documents sharing a term with the query (score > 0).
        """
        if k <= 0 or not self._num_of:
            return []
        scores = self._scores(query)
        if scores is None:
            return []
        # nonzero over a bool mask runs several times faster than over the floats.
        candidates: _Nums = np.flatnonzero(scores > 0.0)
        return self._ranked(candidates, scores[candidates], k, allowed)

    def number(self, doc_id: str) -> int | None:
        """The document's number (what :meth:`search_among` takes); ``None`` when
        not indexed. Numbers of removed documents are given to later ones."""
        return self._num_of.get(doc_id)

    def numbers(self) -> list[int]:
        """The numbers of the documents indexed."""
        return list(self._num_of.values())

    def query_terms(self, query: str) -> list[str]:
        """The distinct terms of ``query`` some document holds, in query order:
        what a search scores."""
        postings = self._postings
        return [t for t in dict.fromkeys(self._tokenize(query)) if t in postings]

    def terms_of_number(self, num: int) -> tuple[str, ...] | None:
        """The indexed terms of document number ``num``; ``None`` for a free number."""
        return self._terms[num] if 0 <= num < len(self._terms) else None

    def search_among(
        self,
        terms: Sequence[str],
        nums: _Nums,
        k: int,
        allowed: DocFilter | None = None,
    ) -> list[tuple[str, float]]:
        """:meth:`search` among the documents numbered ``nums`` only, for the
        distinct indexed ``terms`` of a query (:meth:`query_terms`): each scored
        exactly as :meth:`search` scores it, to the last bit, and ranked the same
        way. Numbers no document holds are skipped."""
        if k <= 0 or not terms or not nums.size:
            return []
        norms = self._length_norms()
        nums = np.unique(nums)
        nums = nums[(nums >= 0) & (nums < len(self._ids))]
        docs_terms = self._terms
        n = len(self._num_of)
        k1 = self.k1
        scores = np.zeros(nums.shape[0], dtype=np.float64)
        held = [docs_terms[num] or () for num in nums.tolist()]
        for term in terms:
            postings = self._postings.get(term)
            if postings is None:
                continue
            tfs = np.fromiter((doc.count(term) for doc in held), dtype=np.float64, count=len(held))
            has = np.flatnonzero(tfs)
            if not has.size:
                continue
            df = len(postings)
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            tf = tfs[has]
            # The expression of _scores, term by term in query order from 0.0: the
            # same additions as its bincount, so the same bits.
            scores[has] += idf * (k1 + 1.0) * tf / (tf + norms[nums[has]])
        matched = np.flatnonzero(scores > 0.0)
        return self._ranked(nums[matched], scores[matched], k, allowed)

    def _ranked(
        self, candidates: _Nums, values: _Scores, k: int, allowed: DocFilter | None
    ) -> list[tuple[str, float]]:
        """The best ``k`` of ``candidates`` (document numbers scoring ``values``,
        all above zero) that ``allowed`` accepts: best first, ties by ascending id."""
        predicate: Callable[[str], bool] | None = None
        if isinstance(allowed, Set):
            if len(allowed) * 16 <= candidates.size:
                # A set much smaller than the candidates is cheaper to look up whole
                # than to test candidate by candidate; a larger one passes enough of
                # the best candidates that testing them in rank order stops early.
                keep = np.zeros(len(self._ids), dtype=bool)
                keep[[n for n in map(self._num_of.get, allowed) if n is not None]] = True
                kept = keep[candidates]
                candidates, values = candidates[kept], values[kept]
            else:
                predicate = allowed.__contains__
        elif allowed is not None:
            predicate = allowed
        hits: list[tuple[str, float]] = []
        ids = self._ids
        for band in _bands(values, k if predicate is None else 4 * k):
            # A band holds every candidate scoring between two cuts, so filtering and
            # sorting it alone keeps the global order (score down, then id up).
            band_ids = [ids[n] for n in candidates[band].tolist()]
            band_scores = values[band]
            if predicate is not None:
                many = getattr(predicate, "many", None)
                # map() keeps the calls in a C loop; only the passing get sorted.
                passed = (
                    many(band_ids)
                    if many is not None
                    else np.fromiter(map(predicate, band_ids), dtype=bool, count=len(band_ids))
                )
                band_ids = list(compress(band_ids, passed.tolist()))
                band_scores = band_scores[passed]
            ranked = sorted(zip((-band_scores).tolist(), band_ids, strict=True))
            hits.extend((doc_id, -negative) for negative, doc_id in ranked[: k - len(hits)])
            if len(hits) == k:
                break
        return hits

    def _length_norms(self) -> _Scores:
        """``k1 · (1 - b + b · |d| / avgdl)`` per document number, computed once
        between writes."""
        norms = self._norms
        if norms is None:
            lengths = np.array(self._lengths, dtype=np.float64)
            norms = self.k1 * (1.0 - self.b + self.b * (lengths / self.avgdl))
            self._norms = norms
        return norms

    def _scores(self, query: str) -> _Scores | None:
        """Dense scores by doc number, ``None`` when no query term is indexed."""
        postings = [p for t in dict.fromkeys(self._tokenize(query)) if (p := self._postings.get(t))]
        if not postings:
            return None
        norms = self._length_norms()
        n = len(self._num_of)
        k1 = self.k1
        docs_of: list[_Nums] = []
        weights_of: list[_Scores] = []
        for p in postings:
            df = len(p)
            idf = math.log1p((n - df + 0.5) / (df + 0.5))
            # np.array copies out of the array.array: no buffer stays exported, so a
            # later write may grow it.
            docs = np.array(p.docs, dtype=np.intp)
            tfs = np.array(p.tfs, dtype=np.float64)
            docs_of.append(docs)
            weights_of.append(idf * (k1 + 1.0) * tfs / (tfs + norms[docs]))
        # One bincount over every term's postings rather than a fancy-index += per
        # term: it adds the weights in the order given, so each document's terms
        # are summed in query order from 0.0, to the same bits.
        scores = np.bincount(
            np.concatenate(docs_of), weights=np.concatenate(weights_of), minlength=len(self._ids)
        )
        return scores.astype(np.float64, copy=False)

    # -- writing --------------------------------------------------------------------

    def add(self, doc_id: str, text: str) -> None:
        """Index a new document.

        Raises:
            KeyError: ``doc_id`` is already indexed (use :meth:`replace`).
        """
        self.add_terms(doc_id, self._tokenize(text))

    def add_terms(self, doc_id: str, terms: Sequence[str]) -> None:
        """Index a new document given as terms (:func:`tokenize`'s output), so that
        a caller holding a lock can tokenize before taking it.

        Raises:
            KeyError: ``doc_id`` is already indexed.
        """
        if doc_id in self._num_of:
            raise KeyError(f"document {doc_id!r} is already indexed")
        self._add_terms(doc_id, tuple(terms))

    def add_many(self, docs: Iterable[tuple[str, str]]) -> None:
        """Index new ``(doc_id, text)`` documents; stops at the first id already
        indexed, keeping the ones before it.

        Raises:
            KeyError: an id is already indexed, or repeated.
        """
        for doc_id, text in docs:
            self.add(doc_id, text)

    def remove(self, doc_id: str) -> bool:
        """Forget a document. ``False`` when it is not indexed."""
        num = self._num_of.pop(doc_id, None)
        if num is None:
            return False
        terms = self._terms[num]
        assert terms is not None
        postings = self._postings
        for term in dict.fromkeys(terms):
            p = postings[term]
            if len(p) == 1:
                del postings[term]
            else:
                p.discard(num)
        self._total_length -= len(terms)
        self._lengths[num] = 0.0
        self._terms[num] = None
        self._ids[num] = ""
        self._free.append(num)
        self._norms = None
        return True

    def replace(self, doc_id: str, text: str) -> bool:
        """Index ``text`` as the document's content, whether or not it was indexed
        (remove, then add).

        Returns:
            Whether the index changed: ``False`` when the document was indexed
            with the same terms (a metadata-only edit of a memory costs a
            tokenization and nothing else).
        """
        return self.replace_terms(doc_id, self._tokenize(text))

    def replace_terms(self, doc_id: str, terms: Sequence[str]) -> bool:
        """:meth:`replace` with the document given as terms."""
        terms = tuple(terms)
        num = self._num_of.get(doc_id)
        if num is not None:
            if terms == self._terms[num]:
                return False
            self.remove(doc_id)
        self._add_terms(doc_id, terms)
        return True

    def _add_terms(self, doc_id: str, terms: tuple[str, ...]) -> None:
        if self._free:
            num = self._free.pop()
            self._ids[num] = doc_id
            self._terms[num] = terms
            self._lengths[num] = len(terms)
        else:
            num = len(self._ids)
            self._ids.append(doc_id)
            self._terms.append(terms)
            self._lengths.append(len(terms))
        self._num_of[doc_id] = num
        postings = self._postings
        # Counter counts in C.
        for term, tf in Counter(terms).items():
            p = postings.get(term)
            if p is None:
                p = postings[term] = _Postings()
            p.docs.append(num)
            p.tfs.append(tf)
        self._total_length += len(terms)
        self._norms = None


def _bands(values: _Scores, size: int) -> Iterator[_Nums]:
    """Positions in ``values`` cut into bands by descending value: first about
    the ``size`` best, then four times more of the rest each time. Every
    position tied with a band's lowest value is in that band, so no tie is split
    across bands.

    Ranking band by band lets a search that stops after ``k`` results pay for a
    partition of the candidates rather than a full sort.
    """
    rest: _Nums = np.arange(values.shape[0])
    size = max(size, 1)
    while rest.size > size:
        rest_values = values[rest]
        cut = np.partition(rest_values, rest.size - size)[rest.size - size]
        take = rest_values >= cut
        yield rest[take]
        rest = rest[~take]
        size *= 4
    if rest.size:
        yield rest
