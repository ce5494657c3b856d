"""Retrieval: lexical scoring, fusion recipes, and the recall pipeline that
combines dense search, BM25 and associative expansion."""

from hippocampus.retrieve.config import DEFAULT_RECIPE, RECIPES, SearchConfig
from hippocampus.retrieve.fusion import mmr, rrf, seed_composite, weighted

__all__ = ["DEFAULT_RECIPE", "RECIPES", "SearchConfig", "mmr", "rrf", "seed_composite", "weighted"]
