"""Generic words: never a trigger, nor a concept on their own.

A trigger (or a one-word concept) links every memory of a collection that says
it. A word said in every kind of text links memories that share nothing but the
word: ``use``, ``change``, ``step``. A researcher reads noise in the drawing,
and in a small collection, where no hub's degree is high, the walk crosses such
a hub as if it meant something. The word may still be part of a phrase
(``breaking change``, ``migration step``): only its hub alone is left out.

The list is measured, not chosen: ``bench/generic_words.py`` on the dev sets
(beam-100k's 20 chats, MuSiQue's and HotpotQA's Wikipedia passages). A word is
generic when it is a hub of at least 1% of a collection's memories in each of
the three sets (beam-100k: the mean over its chats), or in at least three
quarters of the 22 collections the sets make. Of the words a user first saw
as noise: ``use`` (1.6%, 1.3%, 5.8% of MuSiQue's, HotpotQA's and a chat's
memories), ``change`` (1.2%, 1.3%, 2.5%), ``team`` (2.7%, 4.8%, 2.0%) and
``run`` (1.8%, 2.3%, 1.3%) are common in every set; ``step`` (19% of a chat's
turns, in all 20 chats) in nearly every collection; ``own`` is a stop word once
a verb is compared by its lemma (``owns``), so it is never a hub. ``rule``
stays: 1.4% of MuSiQue's passages, 0.2% of HotpotQA's, 0.4% of a chat's.
"""

from __future__ import annotations

GENERIC_WORDS = frozenset(
    """
    add approach area ask balance base book build change check company consider
    consideration cover create day decide design detail enhance ensure event example family
    feature film find focus follow goal head hear help improve include know let life list
    look manage meet movie need number plan point process provide reduce review role run
    schedule series set start step story strategy team term thank think time tip track try
    understand use want way wonder work write year
    """.split()
)
"""Words that are never a trigger nor a one-word concept (``bench/generic_words.py``'s
output on the dev sets)."""
