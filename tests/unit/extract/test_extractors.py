import pytest

from hippocampus.extract import (
    ConceptExtractor,
    Extraction,
    KeywordConceptExtractor,
    SpacyConceptExtractor,
    merge_given,
    normalize_name,
)
from hippocampus.extract.domains import domains_for

TEXT = "Customer reported that the mobile app takes 5+ seconds to load the dashboard"


def test_spacy_finds_lemmatized_noun_phrases_and_drops_stop_words(
    spacy_extractor: SpacyConceptExtractor,
) -> None:
    (x,) = spacy_extractor.extract_many([TEXT])
    assert "mobile app" in x.concepts
    # One word, one hub: a one-word phrase that heads a phrase is a trigger.
    assert "dashboard" in x.triggers and "dashboard" not in x.concepts
    assert "the" not in x.concepts and "that" not in x.triggers
    assert "load" in x.triggers  # main verbs are triggers, lemmatized
    assert "mobile" in x.domains and "performance" in x.domains


def test_spacy_lemmatizes_plurals(spacy_extractor: SpacyConceptExtractor) -> None:
    (x,) = spacy_extractor.extract_many(["Payment gateway timeouts during checkout"])
    assert "payment gateway timeout" in x.concepts
    assert "timeout" in x.triggers
    assert x.domains[0] == "payments"


def test_spacy_keeps_proper_names_whole(spacy_extractor: SpacyConceptExtractor) -> None:
    (x,) = spacy_extractor.extract_many(["Carl Rogers developed person-centered therapy."])
    assert "carl rogers" in x.concepts


def test_extraction_is_deterministic(spacy_extractor: SpacyConceptExtractor) -> None:
    texts = [TEXT, "Payment gateway timeouts during checkout", TEXT]
    first = spacy_extractor.extract_many(texts)
    assert first == spacy_extractor.extract_many(texts)
    assert first[0] == first[2]


def test_one_text_alone_is_extracted_as_in_a_batch(spacy_extractor: SpacyConceptExtractor) -> None:
    texts = ["Raise the Redis connection pools before Black Friday", "Deploys run on Kubernetes"]
    batch = spacy_extractor.extract_many(texts)
    assert [spacy_extractor.extract_many([t])[0] for t in texts] == batch


def test_caller_given_values_replace_extracted_ones_field_by_field() -> None:
    extracted = Extraction(domains=("mobile",), triggers=("load",), concepts=("dashboard",))
    merged = merge_given(extracted, domains=["Perf ", "perf"], triggers=None, concepts=[])
    assert merged.domains == ("perf",)
    assert merged.triggers == ("load",)
    assert merged.concepts == ()


def test_names_are_normalized() -> None:
    assert normalize_name("  Mobile   App. ") == "mobile app"


def test_keyword_extractor_needs_no_model() -> None:
    (x,) = KeywordConceptExtractor().extract_many(["Payment gateway timeouts during checkout"])
    assert "payment gateway" in x.concepts
    assert "timeout" in x.triggers
    assert "payments" in x.domains


@pytest.mark.parametrize("extractor_type", [KeywordConceptExtractor, SpacyConceptExtractor])
def test_every_extractor_meets_the_protocol(extractor_type: type) -> None:
    assert isinstance(extractor_type(), ConceptExtractor)


def test_domains_rank_by_cue_count_then_name() -> None:
    assert domains_for(["checkout", "payment", "slow", "refund"]) == ("payments", "performance")
    assert domains_for(["nothing", "here"]) == ()


def test_an_ambiguous_cue_names_a_domain_only_beside_a_second_cue() -> None:
    # "Caroline went to the LGBTQ support group": not customer support.
    assert domains_for(["caroline", "go", "lgbtq", "support", "group"]) == ()
    assert domains_for(["support", "support"]) == ()  # the same word twice is one cue
    assert domains_for(["support", "ticket"]) == ("customer",)
    assert domains_for(["refund"]) == ("payments",)


def test_spacy_marks_the_concepts_that_are_proper_names(
    spacy_extractor: SpacyConceptExtractor,
) -> None:
    (x,) = spacy_extractor.extract_many(
        ["Brand is a verse tragedy by the playwright Henrik Ibsen, first staged in Stockholm."]
    )
    assert {"henrik ibsen", "stockholm"} <= set(x.names)
    assert "verse tragedy" in x.concepts and "verse tragedy" not in x.names
    assert set(x.names) <= set(x.concepts)


def test_spacy_names_and_phrases_leave_markdown_markup_out(
    spacy_extractor: SpacyConceptExtractor,
) -> None:
    # Assistants answer in markdown; the tagger reads some of its markup as
    # proper nouns. "**Keyword Optimization**:" is the phrase, not a rarer
    # "keyword optimization *" that only bold headings share.
    (x,) = spacy_extractor.extract_many(
        [
            "Here are tips:\n\n1. **Keyword Optimization**: use keywords from the job"
            " description.\n2. **Initial Session:** set the timer.\n"
            "- *Professional Summary*: keep it short."
        ]
    )
    assert "keyword optimization" in x.concepts
    assert "initial session" in x.concepts
    assert "professional summary" in x.concepts
    assert all(any(ch.isalnum() for ch in w) for c in x.concepts for w in c.split()), x.concepts


def test_keyword_names_are_words_capitalized_inside_a_sentence() -> None:
    (x,) = KeywordConceptExtractor().extract_many(
        ["Deploys failed again. We asked Caroline about Kafka replication lag"]
    )
    assert {"caroline", "kafka"} <= set(x.names)
    # Capitalized only where a sentence starts: no name, a trigger.
    assert "deploy" in x.triggers and "deploy" not in x.names
    assert "replication lag" in x.concepts and "replication lag" not in x.names


def test_a_given_concept_is_a_name_when_the_extraction_found_it_as_one() -> None:
    extracted = Extraction(concepts=("henrik ibsen", "play"), names=("henrik ibsen",))
    merged = merge_given(
        extracted, domains=None, triggers=None, concepts=["Play", "Henrik Ibsen", "Norway"]
    )
    assert merged.concepts == ("play", "henrik ibsen", "norway")
    assert merged.names == ("henrik ibsen",)
