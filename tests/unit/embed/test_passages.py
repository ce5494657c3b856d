import itertools

import pytest

from hippocampus.embed.passages import passages


def test_short_text_is_one_passage() -> None:
    assert passages("a short note", 1000) == [(0, 12)]


def test_passages_cover_the_text_within_the_size_and_overlap() -> None:
    text = " ".join(f"Sentence number {i} says something." for i in range(200))
    cuts = passages(text, 300, overlap=50)
    assert cuts[0][0] == 0 and cuts[-1][1] == len(text)
    for (start, end), (next_start, _) in itertools.pairwise(cuts):
        assert end - start <= 300
        assert end - 50 <= next_start <= end  # overlap, never a gap
    assert all(text[start - 1] == " " for start, _ in cuts[1:])  # passages start at a word


def test_passages_end_at_paragraphs_before_sentences() -> None:
    first = "x" * 400 + ". " + "y" * 300
    text = first + "\n\n" + "z" * 900
    (start, end), *_ = passages(text, 1000)
    assert text[start:end].rstrip() == first


def test_a_text_without_breaks_is_cut_at_the_size() -> None:
    assert passages("a" * 2500, 1000) == [(0, 1000), (1000, 2000), (2000, 2500)]


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 50), (100, -1)])
def test_bad_sizes_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        passages("text", size, overlap)
