import pytest

from hippocampus.embed.scope import MAX_SCOPE_CHARS, scope


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Always include version numbers when I ask about software dependencies or libraries.",
            "software dependencies or libraries",
        ),
        ("Never use emojis whenever we discuss release notes.", "release notes"),
        ("Please answer in French if I'm asking for menus, or wine.", "menus, or wine"),
        ("I'd like you to keep it short each time I write about code reviews!", "code reviews"),
        ("From now on, for questions about billing, quote the invoice number.", "billing"),
        ("When it comes to deploys, always list the rollback steps first.", "deploys"),
        ("When I ask about dates, always use the ISO format.", "dates"),
        ("Whenever I ask for a recipe, give the amounts in grams.", "a recipe"),
        ("You should cite the form number when I ask about taxes.", "taxes"),
    ],
)
def test_a_standing_instruction_names_what_it_governs(text: str, expected: str) -> None:
    assert scope(text) == expected


def test_a_condition_in_a_sentence_that_instructs_nothing_is_no_scope() -> None:
    assert scope("It got easier when I asked about taxes at the bank.") is None
    assert scope("When it comes to testing, our suite runs in four minutes.") is None
    assert scope("Always check the logs first.") is None  # a rule, but for every request
    assert scope("When I ask about taxes, I get lost in the forms.") is None
    assert scope("When I ask about taxes, the answers are long.") is None
    assert scope("When I asked about the venue it was booked.") is None


def test_only_the_instructing_sentence_counts_and_clauses_join_in_order() -> None:
    text = (
        "User: I met Ana when I asked about the venue. Always confirm attendance when I ask "
        "about social events. Also, never round figures when I ask about budgets."
    )
    assert scope(text) == "social events; budgets"


def test_a_scope_is_a_clause_not_a_passage() -> None:
    found = scope("Always be brief when I ask about " + "very " * 100 + "long things.")
    assert found is not None and len(found) <= MAX_SCOPE_CHARS
