"""How a word is written in a hub name: as in the text, casefolded, a plural
made singular only where that cannot corrupt the word.

Researchers read hub names in Neo4j Browser and ``/explore``, and a query
finds a hub only by the name a memory's text gave it, so a name must be the
word as people write it: ``Postgres`` is ``postgres``, never the ``postgre``
a lemmatizer makes of a word it does not know; ``data`` stays ``data`` (not
the Latin singular ``datum``); ``analytics jobs`` is ``analytics job``.

The rules, in order (:func:`singular`):

1. A word written as a singular is kept as written.
2. A word that is its own plural or a plural-only noun (``data``, ``news``,
   ``series``, ``analytics``; most nouns in ``-ics``), or a product name
   ending in ``s`` (``kubernetes``, ``postgres``), is kept.
3. An identifier (``max.poll.records``, ``k8s``) is kept, and so is an
   acronym (``DNS``, ``AWS``), but an acronym's ``s`` plural (``APIs``,
   ``PDFs``) and a weekday's (``Fridays``) lose the ``s``, whatever the
   tagger calls them.
4. A plural whose singular the lemmatizer gives and knows as an English noun
   takes it (``queries`` → ``query``, ``indices`` → ``index``).
5. Any other plural loses a regular ending (``webhooks`` → ``webhook``,
   ``caches`` → ``cache``), but a word ending in ``ss``, ``us`` or ``is``, or of
   three letters or fewer, is kept.

Pure text: no model, no I/O (the lemmatizer's answer and its vocabulary come
in as arguments).
"""

from __future__ import annotations

import re
from collections.abc import Container

__all__ = ["KEPT_AS_WRITTEN", "regular_singular", "singular"]

KEPT_AS_WRITTEN = frozenset(
    """
    data media news series species means headquarters analytics economics physics
    mathematics politics ethics logistics electronics genetics linguistics robotics
    graphics semantics dynamics mechanics athletics gymnastics statistics diagnostics
    kubernetes postgres redis jenkins k8s aws ios macos ipados watchos tvos dns cors https
    sms gps saas paas iaas nodejs ops devops
    """.split()
)
"""Words kept as written though they end like a plural: nouns that are their
own plural or have no singular (``data``: what tech writing means by it is not
``datum``), and product and protocol names that end in ``s`` and are often
written in lower case (``postgres``, ``kubernetes``, ``redis``)."""

_COUNT_ICS = frozenset(
    "metric topic clinic comic lyric critic tactic heuristic characteristic relic epic pic".split()
)
"""Nouns in ``-ic`` whose ``-ics`` is a plural (``metrics`` → ``metric``); other
``-ics`` words name a field (``analytics``, ``physics``) and are kept."""

_ACRONYM_PLURAL = re.compile(r"[A-Z][A-Z0-9]+s")
_WEEKDAYS = frozenset(
    f"{day}days" for day in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
)


def singular(
    text: str, *, plural: bool, lemma: str | None = None, known: Container[str] = ()
) -> str:
    """The hub form of a noun written as ``text``.

    Args:
        text: the word as written.
        plural: whether the tagger reads it as a plural.
        lemma: the lemmatizer's singular, if it has one.
        known: nouns the lemmatizer knows (its vocabulary): its singular is
            trusted only when it is one of them.
    """
    low = text.casefold()
    if _ACRONYM_PLURAL.fullmatch(text) or low in _WEEKDAYS:
        return low[:-1]  # whatever the tagger says: PDFs, Fridays
    if not plural or low in KEPT_AS_WRITTEN or not low.replace("-", "").isalpha():
        return low  # an identifier such as max.poll.records or k8s is kept too
    if text.isupper() or any(ch.isupper() for ch in text[1:]):
        return low  # an acronym or a mixed-case name: AWS, iOS, GraphQL
    if low.endswith("ics") and low[:-1] not in _COUNT_ICS:
        return low
    if lemma is not None:
        found = lemma.casefold()
        if found != low and found in known:
            return found
    return regular_singular(low)


def regular_singular(word: str) -> str:
    """A plural's regular ending taken off (``queries`` → ``query``, ``batches`` →
    ``batch``, ``caches`` → ``cache``, ``jobs`` → ``job``); a word that may not be
    a plural at all (in ``ss``, ``us``, ``is``; three letters or fewer; kept as
    written) is kept."""
    if (
        len(word) <= 3
        or not word.endswith("s")
        or word.endswith(("ss", "us", "is"))
        or word in KEPT_AS_WRITTEN
    ):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "tches", "xes", "zzes")):
        return word[:-2]  # classes, crashes, batches, boxes, buzzes
    return word[:-1]  # caches, niches, sizes: where -es could go either way, -s
