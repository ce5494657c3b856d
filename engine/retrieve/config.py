"""Retrieval described by a config object, and the named recipes.

A request picks a recipe by name; the default is the best one measured (see
the note at DEFAULT_RECIPE).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from hippocampus.model.association import ExpandParams

Fusion = Literal["calibrated", "rrf", "weighted", "seed_composite"]


MAX_UNCORROBORATED = 4.0
"""The most :attr:`SearchConfig.uncorroborated` multiplies the lexical weight by."""


class SearchConfig(BaseModel):
    """Which signals a recall uses and how it fuses them.

    Attributes:
        name: the recipe's name.
        dense / lexical / graph: which signals run.
        fusion: ``calibrated`` (similarity plus lexical lead, both measured by
            their spread over the query's best matches, in cosine units; graph
            evidence lifts on top, see :func:`hippocampus.retrieve.fusion.lifted`),
            ``rrf`` (reciprocal rank), ``weighted`` (sum of weighted, max-
            normalized scores, where confidence, quality, usefulness and recency
            may weigh in too) or ``seed_composite`` (0.4·similarity + 0.3·quality
            + 0.3·usefulness over the dense candidates).
        weights: per signal; signals are dense, lexical, graph, confidence,
            quality, usefulness, recency.
        normalize: for ``weighted``, the signals scaled to their best first
            (BM25 has no fixed scale; path strengths do, and keep it unless named).
        rrf_k: the RRF constant.
        candidates: how many candidates each of dense and lexical search returns.
        starts: how many of the best dense/lexical hits start the walk (graph
            expansion) as anchors: its starting memories.
        start_temperature: with a value, the starting memories are the best dense
            hits, each anchoring with strength
            ``exp((similarity - best) / start_temperature)``
            so the walk trusts the clear winners; without, the best hits of dense
            and lexical search fused by rank, strengths normalized to the best.
        query_triggers: anchor the Trigger hubs the query's triggers name (its
            head nouns and verbs: broad, so they add reach more than precision).
        query_subphrases: match the word runs inside the query's phrases to hubs
            too ("redis connection pool" also anchors "connection pool").
        hub_matches: how many hub nodes similar to the query anchor expansion
            (beside the hubs named by the query's concepts).
        hub_min_similarity: the least similarity for such a hub.
        expand: how far and wide expansion walks.
        min_path_strength: an associative-only result (not found by dense or
            lexical search) needs at least this strength...
        min_anchor_paths: ...or paths from at least this many distinct anchors.
        lexical_lean: for ``calibrated``, added to the lexical weight for each
            word of the query that names something exactly (numbers, dates,
            names: :func:`hippocampus.retrieve.fusion.specific_terms`), up to two.
        lexical_disagreement: for ``calibrated``, how much further the lexical
            weight leans (as a share of itself) when dense and lexical search
            disagree: it is multiplied by ``1 + lexical_disagreement × (1 -
            overlap)``, where ``overlap`` is the share of the ten best of each
            that the other has among its ten best
            (:func:`hippocampus.retrieve.fusion.top_overlap`). Where similarity is a
            weak guide (short chatty turns, names the model does not know) its
            best matches stray from those that share the query's words.
        uncorroborated: for ``calibrated``, in standard deviations of the
            query's best similarities: when the best lexical matches sit further
            than this below those similarities' mean, similarity does not
            corroborate what the words found (a model weak on the collection's
            language, a query it reads wrongly), and the lexical weight is
            multiplied by how many times further they sit, up to
            :data:`MAX_UNCORROBORATED` (:func:`hippocampus.retrieve.fusion.corroboration`).
            0: off.
        collection_uncorroborated: for ``calibrated``, the same test applied to
            the collection rather than the query: when the typical corroboration
            of the collection's recent recalls (their median, which the caller
            keeps and passes in) lies further than this below 0, the model reads
            this collection's language poorly, and the lexical weight is
            multiplied again by how many times further, up to
            :data:`MAX_UNCORROBORATED`. A median over many queries wavers far
            less than one query's measure, so it is trusted at a smaller
            distance. 0: off.
        spread_top: for ``calibrated``, how many of each signal's best scores
            measure its spread.
        clear_margin: for ``calibrated``, the most a single anchor's graph
            evidence may lift a memory, in standard deviations of the query's
            best similarities: a direct match better by more is never passed on
            the strength of one anchor.
        turn_context: for ``calibrated``, how much of the direct lead of the
            turn that followed a conversation turn (its reply) the turn gains:
            a question is often answered, and so found, by the turn after it.
            Turns just before the best matches join the candidates for it.
        start_credit: for ``calibrated``, what each starting memory (a direct
            match that anchors the walk) gains, as a share of the graph weight
            times its strength as an anchor. The walk credits a memory for every
            anchor that reaches it but never an anchor for itself, so without it
            a starting memory that no other anchor reaches falls behind a
            neighbour that two of them share even when it matches the query better.
        speaker_lean: for ``calibrated``, what a turn said by a speaker the query
            names (by label, or ``user`` by the first person) gains, in standard
            deviations of the query's best similarities: "what did I decide"
            is answered by the asker's own turns more often than by the replies
            that repeat them.
        crowding: for ``calibrated``, what a memory's crowding costs it: how close
            its nearest neighbours in the collection lie (the mean similarity of
            its 50 nearest, measured against an even sample of the collection:
            :meth:`hippocampus.store.GraphStore.crowding`). Its similarity loses
            ``crowding`` spreads of the query's best similarities for each standard
            deviation its crowding stands above the dense candidates' mean, and
            gains as much for each below. A memory that sits among many like it
            (small talk, a question asked again and again, one of many near
            repeats) is close to many queries for being typical rather than for
            matching any one of them; a memory with few like it that is as close
            to the query matches it for what it says.
        time_lean: for ``calibrated``, what a standard deviation of time's lead is
            worth, as a share of the query's lexical weight (time is weighed as
            the query's words are), in standard deviations of the query's best
            similarities. When ``k`` of the ``spread_top`` best candidates match
            at least as well as the typical best and occurred within a time the
            query names ("in March", "last week": :mod:`hippocampus.retrieve.when`),
            they lead the others by ``sqrt(spread_top / k - 1)`` deviations, as
            the few matches of a rare word do
            (:func:`hippocampus.retrieve.when.time_lifts`). A preference, not a
            filter: it picks among matches, and a memory that matches far better
            at another time still comes first.
        mmr_lambda: with a value, results are diversified by MMR.
        recency_half_life_days: the recency signal halves every so many days.
        present_first: for a question about the present ("can we deploy on
            Friday?", "what do we use now?"), each result ranks above the
            memories it supersedes (:mod:`hippocampus.retrieve.present`). Off in the
            single-signal recipes, which rank by their signal alone.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    dense: bool = True
    lexical: bool = True
    graph: bool = True
    fusion: Fusion = "rrf"
    weights: dict[str, float] = Field(
        default_factory=lambda: {"dense": 1.0, "lexical": 1.0, "graph": 1.0}
    )
    rrf_k: float = Field(default=60.0, gt=0.0)
    candidates: int = Field(default=50, ge=1, le=1000)
    # Accepted under their former names too: seeds, seed_temperature, seed_credit.
    starts: int = Field(default=5, ge=0, le=100, validation_alias=AliasChoices("starts", "seeds"))
    start_temperature: float | None = Field(
        default=None, gt=0.0, validation_alias=AliasChoices("start_temperature", "seed_temperature")
    )
    query_triggers: bool = True
    query_subphrases: bool = True
    normalize: tuple[str, ...] = ("lexical", "graph")
    hub_matches: int = Field(default=8, ge=0, le=100)
    hub_min_similarity: float = Field(default=0.6, ge=-1.0, le=1.0)
    expand: ExpandParams = ExpandParams()
    min_path_strength: float = Field(default=0.5, ge=0.0)
    min_anchor_paths: int = Field(default=2, ge=1)
    lexical_lean: float = Field(default=0.0, ge=0.0)
    lexical_disagreement: float = Field(default=0.0, ge=0.0)
    uncorroborated: float = Field(default=0.0, ge=0.0)
    collection_uncorroborated: float = Field(default=0.0, ge=0.0)
    spread_top: int = Field(default=20, ge=3, le=1000)
    clear_margin: float = Field(default=1.0, ge=0.0)
    turn_context: float = Field(default=0.0, ge=0.0, le=1.0)
    speaker_lean: float = Field(default=0.0, ge=0.0)
    start_credit: float = Field(
        default=0.0, ge=0.0, le=1.0, validation_alias=AliasChoices("start_credit", "seed_credit")
    )
    crowding: float = Field(default=0.0, ge=0.0)
    time_lean: float = Field(default=0.0, ge=0.0)
    mmr_lambda: float | None = Field(default=None, ge=0.0, le=1.0)
    recency_half_life_days: float = Field(default=90.0, gt=0.0)
    present_first: bool = True

    @property
    def needs_metadata(self) -> bool:
        """Whether fusion reads memories' confidence, quality, usefulness or age."""
        extra = ("confidence", "quality", "usefulness", "recency")
        return self.fusion == "seed_composite" or any(self.weights.get(s) for s in extra)


# One signal alone scores on its own scale: DENSE the cosine similarity, BM25 the
# BM25 score divided by the query's best (the top result scores 1.0).
BM25 = SearchConfig(
    name="BM25",
    dense=False,
    graph=False,
    fusion="weighted",
    normalize=("lexical",),
    weights={"lexical": 1.0},
    present_first=False,
)
DENSE = SearchConfig(
    name="DENSE",
    lexical=False,
    graph=False,
    fusion="weighted",
    normalize=(),
    weights={"dense": 1.0},
    present_first=False,
)
HYBRID = SearchConfig(name="HYBRID", graph=False, weights={"dense": 1.0, "lexical": 1.0})
HYBRID_GRAPH = SearchConfig(name="HYBRID_GRAPH")
WEIGHTED = SearchConfig(
    name="WEIGHTED",
    fusion="weighted",
    weights={
        "dense": 0.5,
        "lexical": 0.2,
        "graph": 0.15,
        "confidence": 0.05,
        "quality": 0.03,
        "usefulness": 0.04,
        "recency": 0.03,
    },
)
SEED_COMPOSITE = SearchConfig(
    name="SEED_COMPOSITE",
    lexical=False,
    graph=False,
    fusion="seed_composite",
    weights={"dense": 1.0},
    present_first=False,
)

ASSOCIATIVE = SearchConfig(
    name="ASSOCIATIVE",
    fusion="calibrated",
    normalize=(),
    weights={"dense": 1.0, "lexical": 0.5, "graph": 1.2},
    lexical_lean=0.25,
    lexical_disagreement=0.5,
    uncorroborated=3.0,
    collection_uncorroborated=1.5,
    clear_margin=2.0,
    turn_context=0.3,
    speaker_lean=1.0,
    time_lean=1.0,
    start_temperature=0.03,
    start_credit=0.1,
    crowding=0.5,
    mmr_lambda=0.9,
    query_subphrases=False,
    hub_matches=0,
    expand=ExpandParams(max_depth=2, damping=1.0, hub_degree_mode="inverse", max_results=100),
)
"""The default: similarity and words both, then what the graph adds.

Dense and lexical search each find candidates; each memory scores its cosine
similarity plus its lexical lead (how far its BM25 score stands above the
query's typical best, in the signal's own spread, worth 0.5 of a spread of
similarity, and 0.25 more for each word of the query that names something
exactly, up to two), less half a spread for each standard deviation its
neighbourhood is more crowded than the other candidates' (see ``crowding``). A
conversation turn also gains 0.3 of the lead of the turn that answered it, and a
turn said by a speaker the query names one spread of similarity. The best of
those start a two-hop walk (each with strength ``exp((score - best) / 0.03)``),
beside the hubs of the concepts and triggers the query names; a hub passes on
1/degree of what reaches it. A memory then adds 1.2 ×
the sum of its best paths, except that one anchor never carries it past a
clearly better direct match (two spreads of similarity better): a query-named
hub's path lifts by at most that margin, and a memory reached from a starting
memory stays below it. Each starting memory in turn gains 0.1 × 1.2 × its anchor strength, the
credit the walk gives no anchor for itself. Last, when a few of the 20 best
match at least as well as the typical best and occurred within a time the query
names ("in March", "last week"), they gain what a rare word's few matches would,
weighed as the query's words are. The results are then picked from the best
three times as many by maximal marginal relevance at 0.9: a memory loses a
tenth of its likeness to a result already picked (against nine tenths of its
score, the best scoring 1), so a near repeat of a shown result gives way to
the next memory that says something else. See the README's "How recall ranks"."""

EMBEDDER_DOWN_WARNING = "the embedder is unavailable: results come from text and graph only"
"""The warning of a recall or surfacing whose query could not be embedded."""


def without_dense(config: SearchConfig) -> SearchConfig:
    """The recipe for a query that could not be embedded: dense search has nothing
    to search with, so text search and the graph walk (anchored on the concepts
    the query names) both run, at their own weights where the recipe gives them
    one, else at 1.0. Fusion and everything else stay as the recipe says."""
    weights = dict(config.weights)
    for signal in ("lexical", "graph"):
        if not getattr(config, signal) or weights.get(signal, 0.0) <= 0.0:
            weights[signal] = 1.0
    return config.model_copy(update={"lexical": True, "graph": True, "weights": weights})


RECIPES: dict[str, SearchConfig] = {
    r.name: r for r in (BM25, DENSE, HYBRID, HYBRID_GRAPH, ASSOCIATIVE, WEIGHTED, SEED_COMPOSITE)
}
# Measured with bench/quality.py (MiniLM); the README's "How recall ranks" has the
# tables for every recipe on MuSiQue-100, HotpotQA-100 and beam-100k.
DEFAULT_RECIPE = ASSOCIATIVE.name
