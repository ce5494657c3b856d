"""Reversals: one memory saying the opposite of another about the same thing.

"Use Redis for session storage because it is fast", then "Do not use Redis for
session storage: evictions log users out". The two share few words and their
embeddings are not near-duplicates, yet the second takes back the first. So do
"we no longer store uploads on the NFS share", "stop running the nightly
backfill", "use date-fns instead of Moment.js", "we switched from Jenkins to
GitHub Actions", and "the Friday deploy freeze is lifted" after "no deploys on
Friday".

Each text is read clause by clause. A clause's words are said either plainly
(positive) or under a cue that turns them negative:

- a negation (``not``, ``no``, ``never``, ``nobody``, ``avoid`` as a rule …)
  covers the phrase after it (up to a conjunction or three content words);
  after a form of *be* ("exports are not allowed", "Redis is not
  thread-safe"), the clause's subject too;
- a discontinuation covers what was given up: ``no longer`` / ``not …
  anymore``, ``stop`` doing something, ``instead of`` / ``rather than`` X,
  ``switched`` / ``migrated from`` X ``to`` Y, ``replace`` X ``with`` Y (or "X
  was replaced by Y"), and a state after *be*: "the v1 API is deprecated",
  "exports are disabled";
- a restriction (a ``freeze``, ``ban``, ``moratorium``, ``embargo``,
  ``blackout``) turns its clause negative, and lifting it (``lifted``,
  ``ended``, ``over``, ``removed`` in the same clause) turns it back.

Questions say nothing either way, nor do conditions (``if`` / ``unless`` /
``when`` / ``whether`` clauses), nor idioms that only look negative ("don't
forget", "not only", "not sure", "no problem"). A purpose ("take breaks to
avoid burnout") or a dampener ("reduce", "prevent", "free of") lessens what it
names: neither said plainly nor denied.

Two texts reverse each other when a negative span of one (its content words,
stemmed) is, for the most part, said plainly by the other, each word in a
clause on the same subject (see :func:`_on_one_subject`): "we switched from
Jenkins" takes back "we use Jenkins for CI", not every long message that names
Jenkins in passing.

Pure functions of their arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from hippocampus.extract.turns import said
from hippocampus.lexical import STOP_WORDS, stem

__all__ = ["Reading", "Span", "read", "reversal"]

_WORD = re.compile(r"[^\W_][\w'.+#-]*[^\W_]|[^\W_]", re.UNICODE)
_CONTRACTION = re.compile(r"(\w+)n't\b", re.IGNORECASE)
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Clause breaks inside a sentence: punctuation, then the conjunctions below.
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]\u2014\u2013]|\s-\s")

# Not "without": "without worrying about", "without making a commitment" describe
# how, far more often than they deny.
_NEGATIONS = frozenset("not no never nor cannot nobody none nothing neither".split())
# "Avoid Redis for sessions", "we avoid Friday deploys": a rule. "Take breaks to
# avoid burnout", "arrive early and avoid the crowds": a purpose, which lessens
# what it names (see _DAMPENERS) without denying it.
_AVOIDS = frozenset("avoid avoids avoided avoiding".split())
_AVOID_AS_A_RULE = frozenset(
    "we i you they always never should must please strictly generally usually".split()
)
# Words that lessen what follows without denying it ("reduce burnout", "free of
# complex layouts"): the words they govern are said neither plainly nor negatively.
_DAMPENERS = frozenset(
    """reduce reduces reduced reducing prevent prevents prevented preventing minimize
    minimizes minimized minimizing eliminate eliminates eliminated eliminating lower
    lowers lowered lowering decrease decreases decreased decreasing lack lacks lacked
    lacking less fewer limited limiting mitigate mitigates mitigated mitigating""".split()
)
# A span that runs forward ends at the first of these after its first content word
# ("avoid burnout and maintain productivity" denies burnout, not productivity) ...
_FORWARD_STOPS = frozenset(
    "and or to that which who whom whose as than so while where when nor".split()
)
_SPAN_TERMS = 3
"""... or after this many content words: a negation governs a phrase, not the rest
of a long sentence."""
# A span that reaches back to a clause's subject ("exports are not allowed")
# starts after the last of these before it ("what is working and what is not"
# denies nothing that works).
_BACK_STOPS = frozenset("and or what which that who where when how".split())
_DISCONTINUED_AFTER = frozenset({"anymore"})
_BE = frozenset("is are was were be been being am get gets got".split())
# Words that may stand between a form of be and what it says: "is now deprecated",
# "has been officially retired", "are no longer".
_BETWEEN_BE = frozenset("now also officially already currently permanently still".split())
# A negation of these says the clause's subject is not: "Friday deploys not allowed".
_PREDICATES = frozenset(
    """allowed permitted possible recommended supported needed required necessary ok okay
    safe wise advisable acceptable fine""".split()
)
# States after a form of be that discontinue their subject: "the v1 API is deprecated".
_ENDED_STATES = frozenset(
    """deprecated retired removed disabled banned forbidden prohibited disallowed
    discontinued decommissioned lifted revoked rescinded cancelled canceled suspended
    paused frozen abolished dropped scrapped sunset sunsetted obsolete""".split()
)
_LIFTS = frozenset(
    """lift lifts lifted lifting end ends ended ending over removed remove revoked revoke
    rescinded rescind cancelled canceled cancel scrapped dropped""".split()
)
_RESTRICTIONS = frozenset("freeze ban bans moratorium embargo blackout prohibition".split())
# Before a restriction noun, these make it a verb ("we will freeze", "to ban").
_NOT_BEFORE_A_NOUN = frozenset(
    """to will would should must can could may might please we i you they he she it and
    or not never do does did""".split()
)
_STOPS = frozenset("stop stops stopped stopping quit quits quitting cease ceases ceased".split())
# After these, stop has no object ("the crash stopped after the fix"): no cue.
_INTRANSITIVE_AFTER = frozenset(
    """after when because at in on once since for with by and or then before until as
    again now today yesterday completely entirely""".split()
)
# Changes, not flows: "traffic goes from the balancer to the pods" gives nothing up.
_SWITCHES = frozenset(
    """switch switches switched switching migrate migrates migrated migrating moved
    changed transitioned ported upgrade upgrades upgraded upgrading downgrade downgrades
    downgraded downgrading shifted""".split()
)
_SWITCH_TO = frozenset("to onto into toward towards".split())
_REPLACES = frozenset("replace replaces replaced replacing swap swaps swapped swapping".split())
_REPLACED_WITH = frozenset("with by for".split())
# "instead of X", "rather than X", "in place of X", "in favor of Y" (what follows
# "in favor of" is kept; what it ends is a discontinuation's span).
_INSTEAD = (("instead", "of"), ("rather", "than"), ("in", "place", "of"))
_IN_FAVOR = (("in", "favor", "of"), ("in", "favour", "of"))
# Clauses that open with these assert nothing: conditions and open questions.
_CONDITIONS = frozenset("if unless when whenever whether until once".split())
# Words that open a new clause inside a sentence.
_CONJUNCTIONS = (
    frozenset("but because since although though while whereas however so".split()) | _CONDITIONS
)
# Idioms that look negative and take nothing back.
_IDIOMS: tuple[tuple[str, ...], ...] = (
    ("not", "only"),
    ("not", "just"),
    ("not", "sure"),
    ("not", "certain"),
    ("not", "know"),
    ("not", "forget"),
    ("never", "forget"),
    ("not", "hesitate"),
    ("not", "mind"),
    ("not", "worry"),
    ("not", "bad"),
    ("not", "too", "bad"),
    ("not", "to", "mention"),
    ("not", "wait"),
    ("not", "miss"),
    ("no", "idea"),
    ("no", "problem"),
    ("no", "worries"),
    ("no", "matter"),
    ("no", "doubt"),
    ("no", "wonder"),
    ("no", "later", "than"),
    ("nothing", "but"),
    ("not", "until"),
    ("not", "yet"),
)
_ABOUT_LITTLE_ELSE = 3
"""A clause of at most this many content words is about each of them: "we use
Jenkins for CI" is about Jenkins; a long sentence naming it in passing is not."""
# Content words too common to say what a clause is about.
_GENERIC = frozenset(
    """use uses used using do does did done doing make makes made get gets got go goes
    went need needs needed want wants like also really just still again anymore longer
    please let lets one ones thing things way lot lots now currently today ever always
    yet already even only here there well okay ok yes sure new thank thanks""".split()
)


@dataclass(frozen=True)
class Span:
    """Words a clause says negatively, stemmed; whether they name something given
    up (a discontinuation) rather than merely denied; the clause they are in (by
    its place among the text's clauses)."""

    terms: frozenset[str]
    discontinued: bool
    clause: int


@dataclass(frozen=True)
class Reading:
    """What a text asserts: the content words it says plainly, those it says
    negatively, its negative spans, the content words of each clause, per word
    the clauses that say it plainly, and its length in words."""

    positive: frozenset[str]
    negative: frozenset[str]
    spans: tuple[Span, ...]
    clauses: tuple[frozenset[str], ...]
    said_in: Mapping[str, tuple[int, ...]]
    length: int

    @property
    def terms(self) -> frozenset[str]:
        return self.positive | self.negative


@dataclass
class _Cue:
    start: int  # first word covered
    end: int  # one past the last word covered
    discontinued: bool


def reversal(new_text: str, other_text: str, *, short_words: int = 64) -> frozenset[str]:
    """The words on which one text takes back what the other says (empty when
    neither does). Symmetric: a newer "Use Redis again" reverses an older "do
    not use Redis" as much as the other way round. A conversation turn is read
    without its speaker label.

    Args:
        short_words: a text of at most this many words is a note, whose short
            clauses state what it is about (see :func:`_on_one_subject`).
    """
    a, b = read(said(new_text)), read(said(other_text))
    for one, other in ((a, b), (b, a)):
        plain = other.positive - other.negative
        note = other.length <= short_words
        for span in one.spans:
            # Words the text also says plainly elsewhere are not what it takes back.
            taken_back = span.terms - one.positive
            contested = {
                t for t in taken_back & plain if _on_one_subject(t, span, one, other, note=note)
            }
            if contested and 2 * len(contested) > len(taken_back):
                return frozenset(contested)
    return frozenset()


def _on_one_subject(term: str, span: Span, one: Reading, other: Reading, *, note: bool) -> bool:
    """Whether ``other`` says ``term`` plainly about what ``span`` denies, in a
    clause that

    - shares a content word beyond the span with the span's clause ("we
      replaced LaunchDarkly with Unleash for feature flags" and "feature flags
      are managed in LaunchDarkly"),
    - or is at least half made of the span's words, two or more ("do not use
      Redis for session storage" and "use Redis for session storage"),
    - or, for a discontinuation, which names its subject alone, is about little
      else, in a short note ("we switched from Jenkins" and "we use Jenkins for
      CI"; not a heading or list item of a long text: "Daily to-do list").

    A long text says a word in passing ("the man with no name" and "the film of
    the same name", "instead of vague comments" and "ask the readers about
    their vague comments"); that is not enough."""
    context = one.clauses[span.clause] - span.terms
    for i in other.said_in[term]:
        clause = other.clauses[i]
        covered = len(clause & span.terms)
        if context & clause or (covered >= 2 and 2 * covered >= len(clause)):
            return True
        if note and span.discontinued and len(clause) <= _ABOUT_LITTLE_ELSE:
            return True
    return False


@lru_cache(maxsize=4096)
def read(text: str) -> Reading:
    """What ``text`` asserts (see :class:`Reading`). Cached: a new memory is
    compared with several candidates, often the same ones."""
    positive: set[str] = set()
    negative: set[str] = set()
    spans: list[Span] = []
    clauses: list[frozenset[str]] = []
    said_in: dict[str, list[int]] = {}
    for n, clause in enumerate(_clauses(text)):
        flips, cues = _cues(clause)
        for cue in cues:
            terms = {
                t
                for i in range(cue.start, cue.end)
                if flips[i] % 2 == 1 and (t := _term(clause[i])) is not None
            }
            if terms:
                spans.append(Span(frozenset(terms), cue.discontinued, n))
        words: set[str] = set()
        for i, word in enumerate(clause):
            if flips[i] < 0:
                continue  # a cue or an idiom: says nothing itself
            term = _term(word)
            if term is None:
                continue
            words.add(term)
            if flips[i] % 2:
                negative.add(term)
            else:
                positive.add(term)
                if said_in.get(term, [-1])[-1] != n:
                    said_in.setdefault(term, []).append(n)
        clauses.append(frozenset(words))
    return Reading(
        frozenset(positive),
        frozenset(negative),
        tuple(spans),
        tuple(clauses),
        {t: tuple(ns) for t, ns in said_in.items()},
        len(_WORD.findall(text)),
    )


def _term(word: str) -> str | None:
    if word in STOP_WORDS or word in _GENERIC or len(word) < 2:
        return None
    return stem(word)


def _words(text: str) -> list[str]:
    opened = _CONTRACTION.sub(
        lambda m: f"{_CONTRACTED.get(m.group(1).lower(), m.group(1))} not", text
    )
    words = [w.casefold() for w in _WORD.findall(opened)]
    out: list[str] = []
    for i, word in enumerate(words):
        # "do not use" and "don't use" alike; "cannot" is "can not".
        if word in {"do", "does", "did"} and i + 1 < len(words) and words[i + 1] == "not":
            continue
        if word == "cannot":
            out.extend(("can", "not"))
            continue
        out.append("not" if word == "dont" else word)
    return out


def _clauses(text: str) -> list[list[str]]:
    """The asserting clauses of ``text``, each as its words: questions and
    conditions left out."""
    out: list[list[str]] = []
    for sentence in _SENTENCE_END.split(text.replace("\u2019", "'")):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for part in _CLAUSE_BREAK.split(sentence):
            clause: list[str] = []
            for word in _words(part):
                if word in _CONJUNCTIONS and clause:
                    out.append(clause)
                    clause = []
                clause.append(word)
            if clause:
                out.append(clause)
    return [c for c in out if c[0] not in _CONDITIONS]


def _cues(clause: list[str]) -> tuple[list[int], list[_Cue]]:
    """Per word of ``clause``, how many cues cover it (-1: the word is a cue, part
    of an idiom, or dampened), and the cues."""
    n = len(clause)
    inert = [False] * n
    for i in range(n):
        for idiom in _IDIOMS:
            if tuple(clause[i : i + len(idiom)]) == idiom:
                for j in range(i, i + len(idiom)):
                    inert[j] = True
    cues, dampened = _scan(clause, inert)
    for i in range(n):
        for phrase in _IN_FAVOR:
            if tuple(clause[i : i + len(phrase)]) == phrase:
                for j in range(i, i + len(phrase)):
                    inert[j] = True
    for start, end in dampened:
        for j in range(start, end):
            inert[j] = True
    flips = [0] * n
    for cue in cues:
        for j in range(cue.start, cue.end):
            flips[j] += 1
    for j in range(n):
        if inert[j]:
            flips[j] = -1
    return flips, cues


def _scan(clause: list[str], inert: list[bool]) -> tuple[list[_Cue], list[tuple[int, int]]]:
    """The cues of ``clause``, word by word, and the spans its dampeners cover.
    Marks in ``inert`` the words that are cues (those already marked, idioms, are
    passed over)."""
    n = len(clause)
    cues: list[_Cue] = []
    ends = _span_ends(clause)
    lifted = _lifted_restriction(clause, inert)
    discontinuing = any(w in _DISCONTINUED_AFTER for w in clause) or _has_any_longer(clause)
    dampened: list[tuple[int, int]] = []
    i = 0
    while i < n:
        word = clause[i]
        if inert[i]:
            i += 1
            continue
        if word in _RESTRICTIONS and _is_noun(clause, i):
            inert[i] = True
            if not lifted:
                cues.append(_Cue(0, n, discontinued=False))
        elif word in _LIFTS and lifted:
            inert[i] = True
        elif word == "no" and i + 1 < n and clause[i + 1] in {"longer", "more"}:
            inert[i] = inert[i + 1] = True
            cues.append(_negation(clause, i, i + 2, ends, discontinued=True))
            i += 2
            continue
        elif word in _NEGATIONS or (
            word in _AVOIDS and (i == 0 or clause[i - 1] in _AVOID_AS_A_RULE)
        ):
            inert[i] = True
            cues.append(_negation(clause, i, i + 1, ends, discontinued=discontinuing))
        elif (
            word in _DAMPENERS
            or (word == "free" and i + 1 < n and clause[i + 1] in {"of", "from"})
            or word in _AVOIDS
        ):
            inert[i] = True
            dampened.append((i + 1, _forward(clause, i + 1, ends[i])))
        elif word in _STOPS and (i + 1 < n and clause[i + 1] not in _INTRANSITIVE_AFTER):
            inert[i] = True
            cues.append(_Cue(i + 1, _forward(clause, i + 1, ends[i]), discontinued=True))
        elif word in _ENDED_STATES and _after_be(clause, i):
            inert[i] = True
            cues.append(_Cue(_back(clause, i), ends[i], discontinued=True))
        elif word == "deprecated" and i + 1 < n:
            inert[i] = True  # "the deprecated v1 API"
            cues.append(_Cue(i + 1, _forward(clause, i + 1, ends[i]), discontinued=True))
        elif word in _SWITCHES and (given_up := _switched_from(clause, i)) is not None:
            inert[i] = True
            cues.append(_Cue(*given_up, discontinued=True))
        elif word in _REPLACES:
            inert[i] = True
            cues.append(_Cue(*_replaced(clause, i, ends), discontinued=True))
        else:
            for phrase in _INSTEAD:
                if tuple(clause[i : i + len(phrase)]) == phrase:
                    for j in range(i, i + len(phrase)):
                        inert[j] = True
                    start = i + len(phrase)
                    end = _forward(clause, start, _next_end(clause, start))
                    cues.append(_Cue(start, end, discontinued=True))
                    i = start - 1
                    break
        i += 1
    return cues, dampened


def _negation(
    clause: list[str], at: int, after: int, ends: list[int], *, discontinued: bool
) -> _Cue:
    """A negation at ``at`` (its words up to ``after``): the phrase after it, and
    the clause's subject before it when it denies a predicate of that subject
    ("exports are not allowed", "Redis is not thread-safe")."""
    whole = _after_be(clause, at) or (after < len(clause) and clause[after] in _PREDICATES)
    start = _back(clause, at) if whole else after
    return _Cue(start, _forward(clause, after, ends[at]), discontinued=discontinued)


def _forward(clause: list[str], start: int, end: int) -> int:
    """Where a span from ``start`` ends, at the latest at ``end``: at a stop word
    after its first content word, or after its third content word."""
    seen = 0
    for i in range(start, end):
        word = clause[i]
        if seen and word in _FORWARD_STOPS:
            return i
        if _term(word) is not None:
            seen += 1
            if seen == _SPAN_TERMS:
                return i + 1
    return end


def _back(clause: list[str], at: int) -> int:
    """Where the subject of the predicate at ``at`` starts: after the last stop
    word before it, else at the clause's start."""
    for i in range(at - 1, -1, -1):
        if clause[i] in _BACK_STOPS:
            return i + 1
    return 0


def _after_be(clause: list[str], at: int) -> bool:
    """Whether a form of *be* comes just before ``at`` ("is deprecated", "has
    been officially retired", "are no longer")."""
    j = at - 1
    while j >= 0 and clause[j] in _BETWEEN_BE:
        j -= 1
    return j >= 0 and clause[j] in _BE


def _is_noun(clause: list[str], at: int) -> bool:
    """Whether a restriction word is used as a noun ("the deploy freeze"), not as
    a verb ("we will freeze the schema")."""
    return at > 0 and clause[at - 1] not in _NOT_BEFORE_A_NOUN


def _lifted_restriction(clause: list[str], inert: list[bool]) -> bool:
    """Whether the clause lifts a restriction it names: "the Friday deploy freeze
    is lifted", "they ended the hiring freeze"."""
    has_restriction = any(
        w in _RESTRICTIONS and _is_noun(clause, i) and not inert[i] for i, w in enumerate(clause)
    )
    return has_restriction and any(w in _LIFTS for w in clause)


def _has_any_longer(clause: list[str]) -> bool:
    return any(
        clause[i : i + 2] in (["any", "longer"], ["any", "more"]) for i in range(len(clause))
    )


def _span_ends(clause: list[str]) -> list[int]:
    """For each word, where a span that starts there ends: at "instead of",
    "rather than", "in favor of" or the clause's end."""
    ends = [len(clause)] * len(clause)
    end = len(clause)
    for i in range(len(clause) - 1, -1, -1):
        if any(tuple(clause[i : i + len(p)]) == p for p in (*_INSTEAD, *_IN_FAVOR)):
            end = i
        ends[i] = end
    return ends


def _next_end(clause: list[str], start: int) -> int:
    for i in range(start, len(clause)):
        if any(tuple(clause[i : i + len(p)]) == p for p in _IN_FAVOR):
            return i
    return len(clause)


def _switched_from(clause: list[str], at: int) -> tuple[int, int] | None:
    """What a switch at ``at`` gave up: the words from "from" (or "off") to "to",
    "from" within six words of the verb ("migrated the event store from MongoDB
    to Postgres"); ``None`` when it names nothing left behind."""
    for j in range(at + 1, min(at + 7, len(clause))):
        if clause[j] in {"from", "off"}:
            start = j + 1
            if start < len(clause) and clause[start] in {"of", "from"}:
                start += 1
            end = start
            while end < len(clause) and clause[end] not in _SWITCH_TO:
                end += 1
            return (start, end) if end > start else None
    return None


def _replaced(clause: list[str], at: int, ends: list[int]) -> tuple[int, int]:
    """What a replacement at ``at`` gave up: "X was replaced by Y" (before), "we
    replaced X with Y" (between), "Y replaced X" (after)."""
    if _after_be(clause, at):
        j = at - 1
        while j >= 0 and (clause[j] in _BETWEEN_BE or clause[j] in _BE):
            j -= 1
        while j >= 0 and clause[j] in {"has", "have", "had"}:
            j -= 1
        return 0, j + 1
    for j in range(at + 1, ends[at]):
        if clause[j] in _REPLACED_WITH:
            return at + 1, j
    return at + 1, ends[at]
