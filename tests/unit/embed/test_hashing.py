import numpy as np

from hippocampus.embed import Embedder, HashingEmbedder


def test_hashing_embedder_is_deterministic_and_unit_length() -> None:
    e = HashingEmbedder()
    a = e.encode(["payment gateway timeouts", "team lunch on friday"])
    b = HashingEmbedder().encode(["payment gateway timeouts", "team lunch on friday"])
    assert a.shape == (2, 384) and a.dtype == np.float32
    assert np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_shared_words_make_texts_closer_than_unrelated_ones() -> None:
    v = HashingEmbedder().encode(
        ["checkout payment timeouts", "payment timeouts at checkout again", "lunch moved"]
    )
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3


def test_text_without_words_gives_a_zero_vector() -> None:
    v = HashingEmbedder(dim=16).encode(["", "  !!! "])
    assert v.shape == (2, 16)
    assert not v.any()


def test_hashing_embedder_meets_the_protocol() -> None:
    assert isinstance(HashingEmbedder(), Embedder)
