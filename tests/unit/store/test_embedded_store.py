"""EmbeddedStore against real SQLite files in tmp_path."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hippocampus.errors import (
    ConfigError,
    ConflictError,
    DataDirLockedError,
    InvalidInputError,
    NotFoundError,
    StoreUnavailableError,
)
from hippocampus.model import Edge, EdgeType, Event, Memory, RecallFilters, RetrievalMeta, Tier
from hippocampus.model import content_hash as hash_of
from hippocampus.store import GraphStore, MemoryRecord, Vector
from hippocampus.store.embedded import EmbeddedStore, tables
from hippocampus.store.embedded.memories import FIND_BY_HASH_SQL

C = "org:acme"
OTHER = "persona:ada"
MODEL = "hashing-8"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
ALL_TIERS = RecallFilters(tiers=list(Tier))


def memory(
    memory_id: str,
    collection: str = C,
    *,
    minutes: int = 0,
    content: str | None = None,
    model: str | None = MODEL,
    tier: Tier = Tier.ACTIVE,
    category: str = "insight",
    tags: tuple[str, ...] = (),
    domains: tuple[str, ...] = (),
    conversations: tuple[str, ...] = (),
) -> Memory:
    text = content if content is not None else f"memory {memory_id}"
    at = T0 + timedelta(minutes=minutes)
    return Memory(
        id=memory_id,
        collection=collection,
        content=text,
        category=category,
        tier=tier,
        tags=list(tags),
        created_at=at,
        updated_at=at,
        content_hash=hash_of(text),
        embedding_model=model,
        retrieval=RetrievalMeta(domains=list(domains), conversation_ids=list(conversations)),
    )


def vec(seed: int, dim: int = 8) -> Vector:
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def record(m: Memory, seed: int | None = None, edges: tuple[Edge, ...] = ()) -> MemoryRecord:
    if seed is None:
        seed = zlib.crc32(m.id.encode())
    vector = vec(seed) if m.embedding_model else None
    return MemoryRecord(memory=m, vector=vector, edges=edges)


def hub(source: str, edge_type: EdgeType, name: str, weight: float = 0.3) -> Edge:
    return Edge(source=source, type=edge_type, target=name, weight=weight)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    yield s
    s.close()


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in hits]


# -- opening, locking, closing ----------------------------------------------------------


def test_store_meets_the_graph_store_protocol(store: EmbeddedStore) -> None:
    assert isinstance(store, GraphStore)


def test_creates_the_data_dir_with_wal_and_the_schema(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path / "a" / "b", synchronous="normal") as s:
        s.check()
        assert (tmp_path / "a" / "b" / "hippo.sqlite3").exists()
        assert (tmp_path / "a" / "b" / "hippo.lock").read_text().strip() == str(os.getpid())


def test_unknown_synchronous_mode_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        EmbeddedStore(tmp_path, synchronous="SOMETIMES; DROP TABLE x")


def test_second_store_on_the_same_dir_in_this_process_is_refused(store: EmbeddedStore) -> None:
    with pytest.raises(DataDirLockedError, match=f"pid {os.getpid()}"):
        EmbeddedStore(store.data_dir)


def test_close_releases_the_lock_and_is_idempotent(tmp_path: Path) -> None:
    first = EmbeddedStore(tmp_path)
    first.close()
    first.close()
    with EmbeddedStore(tmp_path) as second:
        second.check()


def test_dir_held_by_another_process_is_refused_naming_its_pid(tmp_path: Path) -> None:
    holder = textwrap.dedent(
        f"""
        import fcntl, os, sys, time
        fd = os.open({str(tmp_path / "hippo.lock")!r}, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, str(os.getpid()).encode())
        print("locked", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(DataDirLockedError) as caught:
            EmbeddedStore(tmp_path)
        message = str(caught.value)
        assert f"pid {proc.pid}" in message and str(tmp_path) in message
        assert "another Hippocampus process" in message
        # kill -9 leaves the file behind but the kernel drops the lock.
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        with EmbeddedStore(tmp_path) as s:
            s.check()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_an_acknowledged_write_survives_kill_9(tmp_path: Path) -> None:
    writer = textwrap.dedent(
        f"""
        import sys, time
        from datetime import UTC, datetime
        from pathlib import Path
        import numpy as np
        from hippocampus.model import Memory, content_hash
        from hippocampus.store import MemoryRecord
        from hippocampus.store.embedded import EmbeddedStore
        store = EmbeddedStore(Path({str(tmp_path)!r}))
        at = datetime(2024, 1, 1, tzinfo=UTC)
        memory = Memory(id="kept", collection={C!r}, content="kept", created_at=at,
                        updated_at=at, content_hash=content_hash("kept"), embedding_model="m")
        store.add_memories({C!r}, [MemoryRecord(memory, np.ones(4, np.float32))])
        print("written", flush=True)
        time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    with EmbeddedStore(tmp_path) as s:
        assert s.get_memories(C, ["kept"]).keys() == {"kept"}
        ones = np.ones(4, np.float32)
        assert ids(s.search_vectors(C, ones, model="m", k=1, filters=RecallFilters())) == ["kept"]


def test_closed_store_is_unavailable(tmp_path: Path) -> None:
    s = EmbeddedStore(tmp_path)
    s.close()
    with pytest.raises(StoreUnavailableError):
        s.check()
    with pytest.raises(StoreUnavailableError):
        s.get_memories(C, ["a"])
    with pytest.raises(StoreUnavailableError):
        s.add_memories(C, [record(memory("a"))])
    with pytest.raises(StoreUnavailableError):
        s.search_vectors(C, vec(1), model=MODEL, k=3, filters=RecallFilters())


# -- memories ---------------------------------------------------------------------------


def test_added_memories_read_back_equal(store: EmbeddedStore) -> None:
    a = memory("a", tags=("x",), domains=("backend",))
    b = memory("b", model=None, minutes=1)
    store.add_memories(C, [record(a, 1), record(b)])
    assert store.get_memories(C, ["b", "missing", "a"]) == {"b": b, "a": a}
    assert list(store.get_memories(C, ["b", "a"])) == ["b", "a"]
    np.testing.assert_array_equal(store.get_vectors(C, ["a", "b"])["a"], vec(1))
    assert "b" not in store.get_vectors(C, ["a", "b"])


def test_add_is_all_or_nothing_when_an_id_exists(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a"))])
    batch = [
        record(memory("new1"), edges=(hub("new1", EdgeType.ABOUT, "caching"),)),
        record(memory("a")),
    ]
    with pytest.raises(ConflictError, match="'a'"):
        store.add_memories(C, batch)
    assert store.get_memories(C, ["new1"]) == {}
    stats = store.stats(C)
    assert stats.memories == 1 and stats.edges == {} and stats.hubs == {}
    assert ids(store.search_vectors(C, vec(0), model=MODEL, k=5, filters=ALL_TIERS)) == ["a"]


def test_add_rejects_an_id_repeated_in_the_batch(store: EmbeddedStore) -> None:
    with pytest.raises(ConflictError, match="repeated"):
        store.add_memories(C, [record(memory("a")), record(memory("a", minutes=1))])
    assert store.stats(C).memories == 0


def test_add_rejects_inconsistent_records(store: EmbeddedStore) -> None:
    with pytest.raises(InvalidInputError):
        store.add_memories(C, [record(memory("a", OTHER))])
    with pytest.raises(InvalidInputError):
        store.add_memories(C, [record(memory("a"), edges=(hub("b", EdgeType.ABOUT, "x"),))])
    with pytest.raises(InvalidInputError):
        store.add_memories(C, [MemoryRecord(memory("a", model=None), vector=vec(1))])
    bad = vec(1)
    bad[0] = np.nan
    with pytest.raises(InvalidInputError):
        store.add_memories(C, [MemoryRecord(memory("a"), vector=bad)])
    assert store.stats(C).memories == 0


def test_a_memory_stored_without_vector_has_no_embedding_model(store: EmbeddedStore) -> None:
    store.add_memories(C, [MemoryRecord(memory("a", model=MODEL), vector=None)])
    stored = store.get_memories(C, ["a"])["a"]
    assert stored.embedding_model is None and stored.needs_embedding


def test_writes_survive_reopen_and_the_rebuilt_index_equals_the_live_one(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as s:
        s.add_memories(
            C,
            [
                record(memory(f"m{i}", minutes=i, tags=(f"t{i % 3}",), conversations=("c1",)), i)
                for i in range(30)
            ],
        )
        s.delete_memory(C, "m4")
        s.set_vectors(C, [("m5", vec(99), MODEL)])
        s.replace_memory(C, MemoryRecord(memory("m6", tier=Tier.ARCHIVED)), replace_edges=False)
        s.upsert_edges(C, [Edge(source="m1", type=EdgeType.ASSOCIATED, target="m2")])
        s.add_memories(
            C,
            [
                record(memory("no-vector", model=None, minutes=40, category="pattern")),
                record(memory("other-model", minutes=41, model="other"), 41),
            ],
        )
        live_entries, live_vectors = s._index(C).snapshot()
        live_stats = s.stats(C)
        before = list(s.iter_memories(C))
    with EmbeddedStore(tmp_path) as s:
        assert list(s.iter_memories(C)) == before
        assert s.stats(C) == live_stats
        assert (live_stats.memories, live_stats.pending_embeddings) == (31, 1)
        assert live_stats.by_tier == {"active": 30, "archived": 1}
        entries, vectors = s._index(C).snapshot()
        assert entries == live_entries
        assert vectors.keys() == live_vectors.keys() and len(vectors) == 30
        for memory_id, row in vectors.items():
            assert row.model == live_vectors[memory_id].model
            np.testing.assert_allclose(row.vector, live_vectors[memory_id].vector, atol=1e-6)
        np.testing.assert_array_equal(s.get_vectors(C, ["m5"])["m5"], vec(99))
        # m2 is a turn of c1 too: it leads to m3, the turn after it.
        assert [(e.type, e.target) for e in s.edges_of(C, "m2")] == [
            (EdgeType.ASSOCIATED, "m1"),
            (EdgeType.NEXT, "m3"),
        ]
        # m4 (deleted) and m6 (no longer a turn) are stepped over.
        assert [e.target for e in s.edges_of(C, "m3") if e.type is EdgeType.NEXT] == ["m5"]
        assert [e.target for e in s.edges_of(C, "m5") if e.type is EdgeType.NEXT] == ["m7"]


def test_iter_memories_streams_oldest_first_across_pages(
    store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tables, "CHUNK", 4)
    # Inserted newest first; two share a timestamp (insertion order breaks the tie).
    batch = [record(memory(f"m{i}", minutes=i // 2 * 2)) for i in reversed(range(11))]
    store.add_memories(C, batch)
    order = [m.id for m in store.iter_memories(C)]
    expected = sorted((m.memory for m in batch), key=lambda m: (m.created_at, -int(m.id[1:])))
    assert order == [m.id for m in expected]


def test_find_by_hash_returns_every_memory_with_that_content(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory("a", content="Use  retries")),
            record(memory("b", content="use retries", minutes=1)),
            record(memory("c", content="something else")),
        ],
    )
    assert store.find_by_hash(C, hash_of("USE RETRIES")) == ["a", "b"]
    assert store.find_by_hash(C, hash_of("nothing")) == []


def test_replace_keeps_the_vector_unless_a_new_one_is_given(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a"), 1)])
    edited = memory("a", content="edited", tier=Tier.ARCHIVED, model=None)
    store.replace_memory(C, MemoryRecord(edited), replace_edges=False)
    stored = store.get_memories(C, ["a"])["a"]
    assert stored.content == "edited" and stored.tier is Tier.ARCHIVED
    assert stored.embedding_model == MODEL  # the kept vector's model, not the caller's copy
    np.testing.assert_array_equal(store.get_vectors(C, ["a"])["a"], vec(1))
    assert store.search_vectors(C, vec(1), model=MODEL, k=3, filters=RecallFilters()) == []
    archived = RecallFilters(tiers=[Tier.ARCHIVED])
    assert ids(store.search_vectors(C, vec(1), model=MODEL, k=3, filters=archived)) == ["a"]

    store.replace_memory(
        C, MemoryRecord(memory("a", model="other"), vector=vec(2)), replace_edges=False
    )
    assert store.get_memories(C, ["a"])["a"].embedding_model == "other"
    np.testing.assert_array_equal(store.get_vectors(C, ["a"])["a"], vec(2))
    assert store.search_vectors(C, vec(2), model=MODEL, k=3, filters=RecallFilters()) == []
    assert ids(store.search_vectors(C, vec(2), model="other", k=3, filters=RecallFilters())) == [
        "a"
    ]


def test_replace_of_an_absent_memory_is_not_found(store: EmbeddedStore) -> None:
    with pytest.raises(NotFoundError):
        store.replace_memory(C, record(memory("ghost")), replace_edges=True)
    assert store.stats(C).memories == 0


def test_replace_edges_swaps_only_hub_edges_and_prunes_orphan_hubs(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(
                memory("a"),
                edges=(
                    hub("a", EdgeType.IN_DOMAIN, "backend"),
                    hub("a", EdgeType.ABOUT, "caching"),
                ),
            ),
            record(memory("b"), edges=(hub("b", EdgeType.ABOUT, "caching"),)),
        ],
    )
    store.upsert_edges(C, [Edge(source="a", type=EdgeType.CONFLICTS_WITH, target="b")])
    store.replace_memory(
        C,
        MemoryRecord(memory("a"), edges=(hub("a", EdgeType.HAS_TRIGGER, "timeout"),)),
        replace_edges=True,
    )
    assert {(e.type, e.target) for e in store.edges_of(C, "a")} == {
        (EdgeType.HAS_TRIGGER, "timeout"),
        (EdgeType.CONFLICTS_WITH, "b"),
    }
    # "backend" lost its only edge; "caching" is still held by b.
    assert store.stats(C).hubs == {"Trigger": 1, "Concept": 1}


def test_delete_removes_the_memory_its_edges_and_its_index_row(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory("a"), 1, edges=(hub("a", EdgeType.ABOUT, "b"),)),
            record(memory("b"), 2),
            record(memory("c"), 3),
        ],
    )
    store.upsert_edges(
        C,
        [
            Edge(source="a", type=EdgeType.ASSOCIATED, target="b"),
            Edge(source="c", type=EdgeType.SYNTHESIZED_FROM, target="b"),
            Edge(source="c", type=EdgeType.ABOUT, target="b"),  # a hub that shares b's id
        ],
    )
    assert store.delete_memory(C, "b") is True
    assert store.delete_memory(C, "b") is False
    assert store.get_memories(C, ["b"]) == {}
    assert [(e.type, e.target) for e in store.edges_of(C, "a")] == [(EdgeType.ABOUT, "b")]
    assert [(e.type, e.target) for e in store.edges_of(C, "c")] == [(EdgeType.ABOUT, "b")]
    assert "b" not in ids(store.search_vectors(C, vec(2), model=MODEL, k=5, filters=ALL_TIERS))
    store.delete_memory(C, "a")
    store.delete_memory(C, "c")
    stats = store.stats(C)
    assert stats.memories == 0 and stats.edges == {} and stats.hubs == {}


# -- vectors ----------------------------------------------------------------------------


def test_search_ranks_by_cosine_best_first(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory(f"m{i}"), i) for i in range(20)])
    q = (vec(7) + 0.1 * vec(100)).astype(np.float32)
    hits = store.search_vectors(C, q, model=MODEL, k=3, filters=RecallFilters())
    assert hits[0][0] == "m7"
    all_ids = [f"m{i}" for i in range(20)]
    matrix = np.stack([vec(i) / np.linalg.norm(vec(i)) for i in range(20)])
    expected = np.argsort(-(matrix @ (q / np.linalg.norm(q))))[:3]
    assert ids(hits) == [all_ids[j] for j in expected]
    assert hits[0][1] >= hits[1][1] >= hits[2][1]


def test_search_applies_filters(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory("a", category="bug_fix", tags=("py",), domains=("backend",)), 1),
            record(memory("b", category="bug_fix", tags=("js",), domains=("web",)), 2),
            record(memory("c", category="pattern", tags=("py",), conversations=("conv",)), 3),
            record(memory("d", tier=Tier.QUARANTINED, category="bug_fix"), 4),
            record(memory("e", tier=Tier.ARCHIVED, category="bug_fix"), 5),
        ],
    )

    def found(**kw: object) -> set[str]:
        filters = RecallFilters.model_validate(kw)
        return set(ids(store.search_vectors(C, vec(9), model=MODEL, k=10, filters=filters)))

    assert found() == {"a", "b", "c"}
    assert found(categories=["bug_fix"]) == {"a", "b"}
    assert found(categories=["bug_fix"], tiers=[Tier.ACTIVE, Tier.ARCHIVED]) == {"a", "b", "e"}
    assert found(tags=["py"], categories=["bug_fix", "pattern"]) == {"a", "c"}
    assert found(domains=["backend", "web"], tags=["js"]) == {"b"}
    assert found(exclude_conversation_id="conv") == {"a", "b"}
    assert found(tiers=[Tier.QUARANTINED]) == {"d"}


def test_search_sees_only_vectors_of_the_requested_model(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory("a", model="old"), 1),
            record(memory("b", model="new"), 1),
            record(memory("c", model=None)),
        ],
    )
    assert ids(store.search_vectors(C, vec(1), model="new", k=5, filters=ALL_TIERS)) == ["b"]
    assert ids(store.search_vectors(C, vec(1), model="old", k=5, filters=ALL_TIERS)) == ["a"]
    assert store.search_vectors(C, vec(1), model="absent", k=5, filters=ALL_TIERS) == []
    assert store.search_vectors(C, vec(1, dim=5), model="new", k=5, filters=ALL_TIERS) == []


def test_set_vectors_updates_existing_memories_and_skips_missing(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a", model=None)), record(memory("b"), 1)])
    store.set_vectors(C, [("a", vec(5), "v2"), ("ghost", vec(6), "v2"), ("b", vec(7), "v2")])
    stored = store.get_memories(C, ["a", "b", "ghost"])
    assert {k: m.embedding_model for k, m in stored.items()} == {"a": "v2", "b": "v2"}
    np.testing.assert_array_equal(store.get_vectors(C, ["a"])["a"], vec(5))
    assert ids(store.search_vectors(C, vec(5), model="v2", k=1, filters=ALL_TIERS)) == ["a"]
    assert store.search_vectors(C, vec(1), model=MODEL, k=3, filters=ALL_TIERS) == []
    assert store.pending_embeddings(C, "v2", 10) == []


def test_pending_embeddings_lists_missing_and_stale_vectors_oldest_first(
    store: EmbeddedStore,
) -> None:
    store.add_memories(
        C,
        [
            record(memory("late", model=None, minutes=9)),
            record(memory("early", model=None, minutes=1)),
            record(memory("stale", model="old", minutes=5), 1),
            record(memory("fresh", model=MODEL, minutes=0), 2),
        ],
    )
    assert [m.id for m in store.pending_embeddings(C, MODEL, 10)] == ["early", "stale", "late"]
    assert [m.id for m in store.pending_embeddings(C, MODEL, 2)] == ["early", "stale"]
    assert store.pending_embeddings(C, MODEL, 0) == []
    assert store.stats(C).pending_embeddings == 2


def test_a_new_dimension_for_a_model_sends_its_older_vectors_to_re_embedding(
    tmp_path: Path,
) -> None:
    with EmbeddedStore(tmp_path) as s:
        s.add_memories(C, [record(memory("a"), 1), record(memory("b", minutes=1), 2)])
        # The model now gives 5-d vectors (same name, new size): the newest wins.
        s.add_memories(C, [MemoryRecord(memory("c", minutes=2), vector=vec(3, dim=5))])
        assert s.search_vectors(C, vec(1), model=MODEL, k=5, filters=ALL_TIERS) == []
        assert ids(s.search_vectors(C, vec(3, dim=5), model=MODEL, k=5, filters=ALL_TIERS)) == ["c"]
        assert [m.id for m in s.pending_embeddings(C, MODEL, 10)] == ["a", "b"]
        live = s._index(C).snapshot()
    with EmbeddedStore(tmp_path) as s:
        entries, vectors = s._index(C).snapshot()
        assert entries == live[0] and vectors.keys() == live[1].keys() == {"c"}
        assert [m.id for m in s.pending_embeddings(C, MODEL, 10)] == ["a", "b"]
        # Re-embedding the pending ones brings them back; nothing is pending after.
        s.set_vectors(C, [("a", vec(4, dim=5), MODEL), ("b", vec(5, dim=5), MODEL)])
        assert s.pending_embeddings(C, MODEL, 10) == []
        hits = s.search_vectors(C, vec(4, dim=5), model=MODEL, k=5, filters=ALL_TIERS)
        assert set(ids(hits)) == {"a", "b", "c"} and hits[0][0] == "a"


# -- edges ------------------------------------------------------------------------------


def test_associated_edges_are_stored_once_and_seen_from_both_ends(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a")), record(memory("b"))])
    at = T0 + timedelta(days=3)
    store.upsert_edges(
        C,
        [
            Edge(source="b", type=EdgeType.ASSOCIATED, target="a", weight=0.3, kind="temporal"),
            Edge(
                source="a",
                type=EdgeType.ASSOCIATED,
                target="b",
                weight=0.4,
                co_occurrences=2,
                last_co_occurred=at,
                kind="co_retrieval",
            ),
        ],
    )
    assert store.stats(C).edges == {"ASSOCIATED": 1}
    from_a = store.edges_of(C, "a")
    from_b = store.edges_of(C, "b")
    # Undated, the edge took its memory's creation; a later write kept it.
    assert from_a == [
        Edge(
            source="a",
            type=EdgeType.ASSOCIATED,
            target="b",
            weight=0.4,
            co_occurrences=2,
            last_co_occurred=at,
            created_at=T0,
            kind="co_retrieval",
        )
    ]
    assert from_b == [from_a[0].model_copy(update={"source": "b", "target": "a"})]


def test_directed_memory_edges_are_seen_only_from_their_source(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a")), record(memory("b"))])
    store.upsert_edges(C, [Edge(source="b", type=EdgeType.SYNTHESIZED_FROM, target="a")])
    assert [e.target for e in store.edges_of(C, "b")] == ["a"]
    assert store.edges_of(C, "a") == []


def test_upsert_edges_skips_missing_memories_and_self_loops(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a"))])
    store.upsert_edges(
        C,
        [
            Edge(source="a", type=EdgeType.ASSOCIATED, target="ghost"),
            Edge(source="ghost", type=EdgeType.ABOUT, target="caching"),
            Edge(source="a", type=EdgeType.ASSOCIATED, target="a"),
            Edge(source="a", type=EdgeType.ABOUT, target="retries", weight=0.5),
        ],
    )
    assert store.edges_of(C, "a") == [
        Edge(source="a", type=EdgeType.ABOUT, target="retries", weight=0.5, created_at=T0)
    ]
    assert store.stats(C).hubs == {"Concept": 1}
    store.upsert_edges(
        C, [Edge(source="a", type=EdgeType.ABOUT, target="retries", weight=0.9, co_occurrences=4)]
    )
    [edge] = store.edges_of(C, "a")
    assert (edge.weight, edge.co_occurrences) == (0.9, 4)


def test_add_memories_links_edges_within_the_batch(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(
                memory("a"),
                edges=(
                    Edge(source="a", type=EdgeType.ASSOCIATED, target="b"),
                    Edge(source="a", type=EdgeType.CONFLICTS_WITH, target="ghost"),
                    hub("a", EdgeType.IN_DOMAIN, "backend"),
                ),
            ),
            record(memory("b")),
        ],
    )
    assert store.stats(C).edges == {"ASSOCIATED": 1, "IN_DOMAIN": 1}
    assert store.stats(C).hubs == {"Domain": 1}


# -- events, stats, collections ----------------------------------------------------------


def test_stats_count_everything_of_one_collection(store: EmbeddedStore) -> None:
    store.add_memories(
        C,
        [
            record(memory("a", category="bug_fix"), edges=(hub("a", EdgeType.ABOUT, "x"),)),
            record(memory("b", category="bug_fix", model=None, tier=Tier.ARCHIVED)),
            record(memory("c", category="pattern"), edges=(hub("c", EdgeType.IN_DOMAIN, "d"),)),
        ],
    )
    store.append_events(
        C,
        [
            Event(type="retrieval", at=T0, memory_ids=["a", "c"], payload={"query": "q", "at": T0}),
            Event(type="engagement", at=T0, memory_ids=["a"]),
        ],
    )
    stats = store.stats(C)
    assert stats.memories == 3
    assert stats.by_category == {"bug_fix": 2, "pattern": 1}
    assert stats.by_tier == {"active": 2, "archived": 1}
    assert stats.pending_embeddings == 1
    assert stats.hubs == {"Concept": 1, "Domain": 1}
    assert stats.edges == {"ABOUT": 1, "IN_DOMAIN": 1}
    assert stats.events == 2


def test_stats_totals_follow_every_write_and_fill_an_older_database(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = EmbeddedStore(data)
    store.add_memories(
        C,
        [
            record(memory(i), edges=(hub(i, EdgeType.ABOUT, f"x{i}"), hub(i, EdgeType.ABOUT, "y")))
            for i in ("a", "b", "c")
        ],
    )
    store.upsert_edges(C, [Edge(source="a", type=EdgeType.ASSOCIATED, target="b")])
    store.delete_memory(C, "c")  # its edges go, and hub x-c with its last edge
    assert store.stats(C).edges == {"ABOUT": 4, "ASSOCIATED": 1}
    assert store.stats(C).hubs == {"Concept": 3}
    assert store.integrity_problems() == []
    store.close()
    # A database from before the totals: they are counted once when it opens.
    with sqlite3.connect(data / "hippo.sqlite3") as conn:
        conn.execute("DROP TABLE edge_totals")
        conn.execute("DROP TABLE hub_totals")
        conn.execute("DELETE FROM meta WHERE key IN ('edge_totals', 'hub_totals')")
    store = EmbeddedStore(data)
    try:
        assert store.stats(C).edges == {"ABOUT": 4, "ASSOCIATED": 1}
        assert store.stats(C).hubs == {"Concept": 3}
        assert store.integrity_problems() == []
        with sqlite3.connect(data / "hippo.sqlite3") as conn:
            conn.execute("UPDATE edge_totals SET n = n + 1 WHERE type = 'ABOUT'")
        assert any("edge_totals" in p for p in store.integrity_problems())
    finally:
        store.close()


def test_collections_never_see_each_other(store: EmbeddedStore) -> None:
    shared = ("x", "y")
    for collection, seed in ((C, 1), (OTHER, 2)):
        store.add_memories(
            collection,
            [
                record(
                    memory(i, collection, content=f"same text {i}"),
                    seed,
                    edges=(hub(i, EdgeType.ABOUT, "topic"),),
                )
                for i in shared
            ],
        )
    store.upsert_edges(OTHER, [Edge(source="x", type=EdgeType.ASSOCIATED, target="y")])
    store.append_events(OTHER, [Event(type="retrieval", at=T0)])
    store.set_vectors(OTHER, [("x", vec(50), "other-model")])
    store.replace_memory(
        OTHER, record(memory("y", OTHER, content="changed"), 3), replace_edges=True
    )

    assert store.list_collections() == sorted([C, OTHER])
    assert {m.collection for m in store.get_memories(C, list(shared)).values()} == {C}
    assert [m.content for m in store.iter_memories(C)] == ["same text x", "same text y"]
    assert store.find_by_hash(C, hash_of("changed")) == []
    assert store.search_vectors(C, vec(50), model="other-model", k=5, filters=ALL_TIERS) == []
    assert set(ids(store.search_vectors(C, vec(1), model=MODEL, k=5, filters=ALL_TIERS))) == {
        "x",
        "y",
    }
    np.testing.assert_array_equal(store.get_vectors(C, ["x"])["x"], vec(1))
    assert [e.type for e in store.edges_of(C, "x")] == [EdgeType.ABOUT]
    assert store.pending_embeddings(C, MODEL, 10) == []
    stats = store.stats(C)
    assert (stats.memories, stats.events, stats.edges, stats.hubs) == (
        2,
        0,
        {"ABOUT": 2},
        {"Concept": 1},
    )
    assert store.delete_memory(OTHER, "x") is True
    assert store.get_memories(C, ["x"]).keys() == {"x"}
    assert store.stats(OTHER).memories == 1


# -- failures and concurrency ------------------------------------------------------------


def test_a_full_disk_is_unavailable_and_leaves_nothing_half_written(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory("a"))])
    assert store._writer is not None
    pages = store._writer.execute("PRAGMA page_count").fetchone()[0]
    store._writer.execute(f"PRAGMA max_page_count = {pages}")
    big = [
        record(
            memory(f"big{i}", content="x" * 4000 + str(i)),
            edges=(hub(f"big{i}", EdgeType.ABOUT, "t"),),
        )
        for i in range(50)
    ]
    with pytest.raises(StoreUnavailableError, match="full"):
        store.add_memories(C, big)
    store._writer.execute("PRAGMA max_page_count = 1073741823")
    assert store.stats(C).memories == 1 and store.stats(C).edges == {}
    assert ids(store.search_vectors(C, vec(0), model=MODEL, k=5, filters=ALL_TIERS)) == ["a"]
    store.add_memories(C, big[:1])
    assert store.stats(C).memories == 2


def test_searches_run_beside_writes_and_see_whole_batches(store: EmbeddedStore) -> None:
    store.add_memories(C, [record(memory(f"seed{i}"), i) for i in range(10)])
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                hits = store.search_vectors(C, vec(3), model=MODEL, k=500, filters=ALL_TIERS)
                # Batches of 8 land whole: the count is always 10 + a multiple of 8.
                assert (len(hits) - 10) % 8 == 0
                store.get_memories(C, ids(hits[:5]))
        except BaseException as e:
            errors.append(e)

    readers = [threading.Thread(target=search) for _ in range(3)]
    for t in readers:
        t.start()
    for batch in range(20):
        store.add_memories(C, [record(memory(f"b{batch}-{i}"), batch * 8 + i) for i in range(8)])
    stop.set()
    for t in readers:
        t.join()
    assert errors == []
    assert store.stats(C).memories == 170


def test_find_by_hash_is_served_by_the_hash_index(store: EmbeddedStore) -> None:
    # Every remember looks its content up by hash; a scan here made ingest quadratic.
    with store._reading("plan") as conn:
        plan = conn.execute("EXPLAIN QUERY PLAN " + FIND_BY_HASH_SQL, ("c", "h")).fetchall()
    assert any("memories_by_hash" in str(row) for row in plan)


def test_warm_builds_every_collections_indexes_before_a_request_does(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as s:
        s.add_memories(C, [record(memory(f"m{i}", minutes=i), i) for i in range(3)])
        s.add_memories(OTHER, [record(memory("o1", OTHER), 7)])
    with EmbeddedStore(tmp_path) as s:
        assert not s._indexes  # a reopened store builds nothing until asked
        assert s.warm() == 2
        assert sorted(s._indexes) == sorted(s._texts) == sorted(s._graphs) == sorted([C, OTHER])
        assert s.warm() == 0  # nothing left to build
        assert [mid for mid, _ in s.search_vectors(C, vec(1), model=MODEL, k=1, filters=ALL_TIERS)]
    s.warm()  # closed: stops quietly
    assert not s._indexes
