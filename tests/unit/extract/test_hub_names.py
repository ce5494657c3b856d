"""Hub names as a researcher reads them: a table of sentences (names, products,
plurals, chat turns) and the domains, triggers, concepts and names each gives.

Names and products keep their written form, casefolded (``postgres``, never
``postgre``); plurals are made singular without corrupting a word (``data``
stays, ``analytics jobs`` is ``analytics job``); generic words are no hub alone;
a surname alone is no trigger; one word is one hub; a cue that is ambiguous
alone names no domain. Chat turns are read as the service reads them, without
their speaker label.
"""

from __future__ import annotations

import pytest

from hippocampus.extract import KeywordConceptExtractor, SpacyConceptExtractor
from hippocampus.extract.forms import singular
from hippocampus.extract.generic import GENERIC_WORDS
from hippocampus.extract.turns import said

Row = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]

# (text, domains, triggers, concepts, names)
TABLE: list[Row] = [
    (
        "Our Postgres replicas lag behind the primary during the nightly backup.",
        ("database", "performance"),
        ("replica", "lag", "primary", "backup"),
        ("postgres", "postgres replica", "nightly backup"),
        ("postgres",),
    ),
    (
        "We run the analytics jobs on Kubernetes.",
        ("infrastructure",),
        ("job",),
        ("analytics job", "kubernetes"),
        ("kubernetes",),
    ),
    (
        "The data platform team owns the analytics jobs.",
        (),
        ("job",),
        ("data platform team", "analytics job"),
        (),
    ),
    (
        "Priya Shah owns the deploy rule; change it with her.",
        ("infrastructure",),
        ("rule",),
        ("priya shah", "deploy rule"),
        ("priya shah",),
    ),
    (
        "Maria moved the session cache from Redis to Memcached.",
        ("performance",),
        ("cache",),
        ("maria", "session cache", "redis", "memcached"),
        ("maria", "redis", "memcached"),
    ),
    (
        "Jenkins builds broke after the plugin upgrade.",
        (),
        ("break", "upgrade"),
        ("jenkins build", "plugin upgrade"),
        (),
    ),
    (
        "The iOS app crashes when the user rotates the screen.",
        ("mobile", "customer", "debugging"),
        ("app", "crash", "user", "rotate", "screen"),
        ("ios", "ios app"),
        ("ios",),
    ),
    (
        "We switched from MySQL to Postgres last spring.",
        ("database",),
        ("switch", "spring"),
        ("mysql", "postgres"),
        ("mysql", "postgres"),
    ),
    (
        "Kafka consumers commit offsets in batches.",
        (),
        ("consumer", "commit", "offset", "batch"),
        ("kafka", "kafka consumer"),
        ("kafka",),
    ),
    (
        "The Stripe webhooks arrive twice when our endpoint is slow.",
        ("api", "payments", "performance"),
        ("webhook", "arrive", "endpoint"),
        ("stripe", "stripe webhook"),
        ("stripe",),
    ),
    (
        "Grafana dashboards show the p99 latency of the checkout service.",
        ("performance", "frontend", "payments"),
        ("dashboard", "latency", "service"),
        ("grafana", "grafana dashboard", "p99 latency", "checkout service"),
        ("grafana",),
    ),
    (
        "Tom fixed the Elasticsearch mapping in April.",
        ("debugging",),
        ("fix", "mapping"),
        ("tom", "elasticsearch", "elasticsearch mapping", "april"),
        ("tom", "elasticsearch", "april"),
    ),
    (
        "The AWS buckets are encrypted with KMS keys.",
        ("infrastructure", "security"),
        ("bucket", "encrypt", "key"),
        ("aws", "aws bucket", "kms", "kms key"),
        ("aws", "kms"),
    ),
    (
        "Our APIs return JSON errors with request IDs.",
        ("api", "debugging"),
        ("api", "return", "error", "id"),
        ("json error", "request id"),
        (),
    ),
    (
        "GraphQL queries are limited by depth and cost.",
        ("api", "database"),
        ("query", "limit", "depth", "cost"),
        ("graphql", "graphql query"),
        ("graphql",),
    ),
    (
        "Henrik Ibsen wrote Peer Gynt in Rome.",
        (),
        (),
        ("henrik ibsen", "peer gynt", "rome"),
        ("henrik ibsen", "peer gynt", "rome"),
    ),
    (
        "Caroline went to the LGBTQ support group.",
        (),
        ("group",),
        ("caroline", "lgbtq", "lgbtq support group"),
        ("caroline", "lgbtq"),
    ),
    (
        "Melanie painted a sunrise with her kids at the lake.",
        (),
        ("paint", "sunrise", "kid", "lake"),
        ("melanie",),
        ("melanie",),
    ),
    (
        "The DNS records point at the old load balancers.",
        ("infrastructure", "performance"),
        ("dns", "record", "balancer"),
        ("old load balancer",),
        (),
    ),
    (
        "Send the invoice PDFs through SendGrid.",
        ("payments",),
        ("send", "pdf"),
        ("invoice pdf", "sendgrid"),
        ("sendgrid",),
    ),
    (
        "The data warehouse refreshes every hour.",
        (),
        ("warehouse", "refresh", "hour"),
        ("data warehouse",),
        (),
    ),
    (
        "Media files are stored in the assets bucket.",
        (),
        ("file", "store", "bucket"),
        ("media file", "assets bucket"),
        (),
    ),
    (
        "Analytics dashboards load slowly on Mondays.",
        ("frontend", "performance"),
        ("dashboard", "load"),
        ("analytics dashboard", "monday"),
        ("monday",),
    ),
    (
        "The criteria for promotion were unclear.",
        (),
        ("criterion", "promotion"),
        (),
        (),
    ),
    (
        "Indices on foreign keys fixed the slow queries.",
        ("database", "debugging", "performance"),
        ("index", "key", "fix", "query"),
        ("foreign key", "slow query"),
        (),
    ),
    (
        "The statuses of the work items changed overnight.",
        (),
        ("status", "item"),
        ("work item",),
        (),
    ),
    (
        "Our caches expire after ten minutes.",
        ("performance",),
        ("cache", "expire", "minute"),
        (),
        (),
    ),
    (
        "Aliases point at the new indexes.",
        ("database",),
        ("alias", "index"),
        ("new index",),
        (),
    ),
    (
        "The news feed lost its series of posts.",
        (),
        ("feed", "lose", "post"),
        ("news feed",),
        (),
    ),
    (
        "People on the payments team review the analyses.",
        ("payments",),
        ("people", "analysis"),
        ("payments team",),
        (),
    ),
    (
        "Set max.poll.records to 500 on the consumers.",
        (),
        ("consumer",),
        ("max.poll.records",),
        ("max.poll.records",),
    ),
    (
        "Physics simulations run on the GPU cluster.",
        ("infrastructure",),
        ("simulation", "cluster"),
        ("physics simulation", "gpu", "gpu cluster"),
        ("gpu",),
    ),
    (
        "The migrations locked the orders table.",
        ("database",),
        ("migration", "lock", "table"),
        ("orders table",),
        (),
    ),
    (
        "Our metrics show fewer retries since the fix.",
        ("debugging",),
        ("metric", "retry", "fix"),
        (),
        (),
    ),
    (
        "User: can you help me plan my week? I have three deadlines.",
        (),
        ("week", "deadline"),
        (),
        (),
    ),
    (
        "Assistant: Of course! Here are some tips to balance your tasks.",
        (),
        ("task",),
        (),
        (),
    ),
    (
        "User: I think we should use Terraform for the staging environment.",
        ("infrastructure",),
        ("environment",),
        ("terraform", "staging environment"),
        ("terraform",),
    ),
    (
        "Assistant: Sure, step one is to create the state bucket.",
        (),
        ("bucket",),
        ("state bucket",),
        (),
    ),
    (
        "User: my laptop keeps overheating when I run Docker.",
        ("infrastructure",),
        ("laptop", "overheat"),
        ("docker",),
        ("docker",),
    ),
    (
        "User: what did Tom fix in April?",
        ("debugging",),
        ("fix",),
        ("tom", "april"),
        ("tom", "april"),
    ),
    (
        "Assistant: The public REST API is versioned in the URL path.",
        ("api",),
        ("api", "version", "path"),
        ("public rest api", "url path"),
        (),
    ),
    (
        "User: do we still deploy on Fridays?",
        ("infrastructure",),
        ("deploy",),
        ("friday",),
        ("friday",),
    ),
    (
        "Assistant: Deploys hung because the liveness probe failed.",
        ("debugging", "infrastructure"),
        ("deploy", "hang", "probe", "fail"),
        ("liveness probe",),
        (),
    ),
    (
        "User: thanks, that worked!",
        (),
        (),
        (),
        (),
    ),
]


@pytest.mark.parametrize(("text", "domains", "triggers", "concepts", "names"), TABLE)
def test_each_sentence_gives_the_hubs_a_reader_expects(
    spacy_extractor: SpacyConceptExtractor,
    text: str,
    domains: tuple[str, ...],
    triggers: tuple[str, ...],
    concepts: tuple[str, ...],
    names: tuple[str, ...],
) -> None:
    (x,) = spacy_extractor.extract_many([said(text)])
    assert (x.domains, x.triggers, x.concepts, x.names) == (domains, triggers, concepts, names)


def test_the_table_has_forty_sentences_and_keeps_every_hub_rule() -> None:
    assert len(TABLE) >= 40
    for text, _, triggers, concepts, names in TABLE:
        assert not set(triggers) & GENERIC_WORDS, text
        assert not set(triggers) & set(names), text  # a name is a concept only
        single = {c for c in concepts if " " not in c}
        assert not single & set(triggers), text  # one word, one hub


def test_a_batch_reads_each_sentence_as_alone(spacy_extractor: SpacyConceptExtractor) -> None:
    texts = [said(row[0]) for row in TABLE]
    assert spacy_extractor.extract_many(texts) == [
        spacy_extractor.extract_many([t])[0] for t in texts
    ]


@pytest.mark.parametrize(
    ("written", "plural", "form"),
    [
        ("Postgres", True, "postgres"),
        ("kubernetes", True, "kubernetes"),
        ("data", True, "data"),
        ("analytics", True, "analytics"),
        ("physics", True, "physics"),
        ("metrics", True, "metric"),
        ("series", True, "series"),
        ("jobs", True, "job"),
        ("queries", True, "query"),
        ("caches", True, "cache"),
        ("webhooks", True, "webhook"),
        ("batches", True, "batch"),
        ("status", False, "status"),
        ("bus", True, "bus"),
        ("APIs", False, "api"),
        ("AWS", True, "aws"),
        ("k8s", True, "k8s"),
        ("max.poll.records", True, "max.poll.records"),
        ("Fridays", True, "friday"),
    ],
)
def test_a_plural_is_made_singular_only_where_that_is_safe(
    written: str, plural: bool, form: str
) -> None:
    assert singular(written, plural=plural) == form


def test_the_lemmatizers_singular_is_taken_only_when_it_knows_the_word() -> None:
    assert singular("indices", plural=True, lemma="index", known={"index"}) == "index"
    assert singular("data", plural=True, lemma="datum", known={"datum"}) == "data"
    assert singular("postgres", plural=True, lemma="postgre", known=set()) == "postgres"
    assert singular("statuses", plural=True, lemma="status", known={"status"}) == "status"


def test_the_keyword_extractor_follows_the_same_hub_rules() -> None:
    (x,) = KeywordConceptExtractor().extract_many(
        ["We asked Caroline to change the Postgres analytics jobs and use the data team"]
    )
    assert "postgres analytics" in x.concepts and "analytics job" in x.concepts
    assert {"caroline", "postgres"} <= set(x.names)
    assert not {"caroline", "postgres", "change", "use", "team"} & set(x.triggers)
    assert "job" in x.triggers and "data" in x.triggers
