"""The embedded store's index snapshots: saved at close, loaded at the next start
only while nothing has been written since, and never trusted beyond that."""

from __future__ import annotations

import io
import logging
import os
import pickle
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from hippocampus.config import HippoSettings
from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore, snapshots
from hippocampus.store.embedded.base import SNAPSHOTS_FOLDER
from hippocampus.store.embedded.store import DB_FILE

C = "team:snap"
OPERATOR = "operator"
TEXTS = [
    "Redis connection pool exhausted under checkout load: raise the pool size",
    "The nightly export job timed out because of a missing index on orders",
    "Retry storms without jitter took the billing service down twice",
    "A stale DNS entry sent webhook traffic to the old load balancer",
    "Postgres vacuum fell behind on the orders table after the bulk import",
    "The checkout service pins its Redis client to version 4 for cluster mode",
]
QUERIES = ["redis pool at checkout", "orders table import", "billing outage retries"]


def _service(data_dir: Path, extractor: SpacyConceptExtractor) -> Hippocampus:
    """A service on ``data_dir`` whose collections' indexes are ready (loaded or built)."""
    svc = Hippocampus(
        EmbeddedStore(data_dir, synchronous="NORMAL", snapshot_from=1),
        HashingEmbedder(),
        extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    svc.store.warm()
    return svc


def _store(svc: Hippocampus) -> EmbeddedStore:
    assert isinstance(svc.store, EmbeddedStore)
    return svc.store


def _answers(svc: Hippocampus) -> list[list[tuple[str, float]]]:
    """What each query recalls, without teaching anything (answers stay comparable)."""
    return [[(r.memory.id, r.score) for r in svc.recall(C, q, learn=False).hits] for q in QUERIES]


def _recorded(data_dir: Path) -> dict[str, str]:
    with sqlite3.connect(data_dir / DB_FILE) as conn:
        return dict(conn.execute("SELECT collection, token FROM index_snapshots"))


@pytest.fixture
def data_dir(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Path]:
    """A data directory whose collection went through every kind of write, closed."""
    svc = _service(tmp_path / "data", spacy_extractor)
    outs = svc.remember_many(C, [NewMemory(content=t, source=OPERATOR) for t in TEXTS])
    ids = [o.memory.id for o in outs if o.memory is not None]
    for _ in range(3):
        svc.recall(C, "redis pool exhausted at checkout")
    svc.feedback(C, ids[0], helpful=True, context=["pool sizing"])
    svc.update(C, ids[2], MemoryPatch(content="Retry storms without jitter: add backoff"))
    svc.update(C, ids[3], MemoryPatch(tags=["dns"]))
    svc.forget(C, ids[1])  # a free slot, reused by the next memory
    svc.remember(
        C, NewMemory(content="Kafka consumer lag grew after the rebalance", source=OPERATOR)
    )
    svc.decay(C)
    svc.close()
    yield tmp_path / "data"


def test_indexes_saved_at_close_are_loaded_and_answer_as_built_ones(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor, caplog: pytest.LogCaptureFixture
) -> None:
    assert list(_recorded(data_dir)) == [C]
    caplog.set_level(logging.INFO, logger="hippocampus.store.embedded.base")
    loaded = _service(data_dir, spacy_extractor)
    try:
        from_snapshot = _answers(loaded)
        assert _store(loaded).loaded_from_snapshot(C)
        assert "loaded from" in caplog.text
        assert _store(loaded).integrity_problems() == []
    finally:
        loaded.close()
    # Unchanged: the snapshot stands as it was, not written again.
    token = _recorded(data_dir)[C]
    assert _store(loaded)._restored[C] == token
    # The same data, every index built from the rows.
    for path in (data_dir / SNAPSHOTS_FOLDER).iterdir():
        (path / "index.pickle").unlink()
    built = _service(data_dir, spacy_extractor)
    try:
        assert not _store(built).loaded_from_snapshot(C)
        rebuilt = _answers(built)
        # The same memories in the same order; scores to float rounding (a vector
        # normalized as it was written and one normalized in a rebuild's batch
        # may differ in the last bit).
        assert [[m for m, _ in a] for a in rebuilt] == [[m for m, _ in a] for a in from_snapshot]
        assert [[s for _, s in a] for a in rebuilt] == [
            pytest.approx([s for _, s in a], abs=1e-6) for a in from_snapshot
        ]
        assert from_snapshot[0]  # the queries find something
    finally:
        built.close()


def test_a_write_outdates_the_snapshot_in_its_own_transaction(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    svc = _service(data_dir, spacy_extractor)
    try:
        token = _recorded(data_dir)[C]
        assert _store(svc)._restored[C] == token
        new = svc.remember(
            C, NewMemory(content="Grafana alerts page the on-call twice", source=OPERATOR)
        )
        assert _recorded(data_dir) == {}
    finally:
        svc.close()
    # Written again at close, with the new memory, under a new token.
    assert _recorded(data_dir)[C] != token
    reopened = _service(data_dir, spacy_extractor)
    try:
        assert _store(reopened).loaded_from_snapshot(C)
        assert new.memory is not None
        found = reopened.recall(C, "grafana alerts on-call", learn=False).hits
        assert found[0].memory.id == new.memory.id
        assert _store(reopened).integrity_problems() == []
    finally:
        reopened.close()


def test_writes_to_another_collection_leave_the_snapshot_standing(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    token = _recorded(data_dir)[C]
    svc = _service(data_dir, spacy_extractor)
    try:
        svc.remember(
            "team:other", NewMemory(content="Nginx caches the status page", source=OPERATOR)
        )
        assert _recorded(data_dir) == {C: token}
    finally:
        svc.close()
    reopened = _service(data_dir, spacy_extractor)
    try:
        assert _store(reopened).loaded_from_snapshot(C)
    finally:
        reopened.close()


def test_a_change_by_another_writer_outdates_the_snapshot(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    with sqlite3.connect(data_dir / DB_FILE) as conn:
        conn.execute("UPDATE edges SET weight = weight / 2 WHERE collection = ?", (C,))
    assert _recorded(data_dir) == {}
    svc = _service(data_dir, spacy_extractor)
    try:
        assert not _store(svc).loaded_from_snapshot(C)
        assert _store(svc).integrity_problems() == []
    finally:
        svc.close()


def test_a_crash_after_a_write_rebuilds_from_the_rows(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    # Another process loads the snapshot, writes, and dies without closing.
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from hippocampus.store.embedded import EmbeddedStore
        store = EmbeddedStore(Path({str(data_dir)!r}), snapshot_from=1)
        memory = next(iter(store.iter_memories({C!r})))
        assert store.delete_memory({C!r}, memory.id)
        assert store.loaded_from_snapshot({C!r})
        print(memory.id, flush=True)
        os._exit(0)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    deleted = out.stdout.strip()
    svc = _service(data_dir, spacy_extractor)
    try:
        store = _store(svc)
        assert not store.loaded_from_snapshot(C)
        assert store.get_memories(C, [deleted]) == {}
        assert deleted not in {m for answer in _answers(svc) for m, _ in answer}
        assert store.integrity_problems() == []
    finally:
        svc.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data[:40] + bytes(reversed(data[40:200])) + data[200:],  # scrambled
        lambda data: pickle.dumps(["not", "an", "index"]),
    ],
    ids=["truncated", "scrambled", "foreign"],
)
def test_a_damaged_snapshot_is_built_again(
    data_dir: Path,
    spacy_extractor: SpacyConceptExtractor,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[bytes], bytes],
) -> None:
    [folder] = (data_dir / SNAPSHOTS_FOLDER).iterdir()
    text = folder / "text.pickle"
    text.write_bytes(damage(text.read_bytes()))
    svc = _service(data_dir, spacy_extractor)
    try:
        assert not _store(svc).loaded_from_snapshot(C)
        assert "does not read back" in caplog.text
        assert _store(svc).integrity_problems() == []
    finally:
        svc.close()


class _Planted:
    """Unpickles as a call to os.system: what a snapshot must never run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.path}",))


def test_a_snapshot_naming_anything_but_index_parts_is_refused_not_run(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor, tmp_path: Path
) -> None:
    [folder] = (data_dir / SNAPSHOTS_FOLDER).iterdir()
    planted = tmp_path / "ran"
    (folder / "due.pickle").write_bytes(pickle.dumps({"_ids": _Planted(planted)}))
    svc = _service(data_dir, spacy_extractor)
    try:
        assert not _store(svc).loaded_from_snapshot(C)
        assert not planted.exists()
        assert _store(svc).integrity_problems() == []
    finally:
        svc.close()


def test_a_snapshot_written_by_other_code_is_ignored(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "code_fingerprint", lambda: "another version")
    svc = _service(data_dir, spacy_extractor)
    try:
        assert not _store(svc).loaded_from_snapshot(C)
    finally:
        svc.close()
    # Written again by this code, at close.
    [folder] = (data_dir / SNAPSHOTS_FOLDER).iterdir()
    assert '"code": "another version"' in (folder / "meta.json").read_text()


def test_a_snapshot_under_another_token_is_ignored(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    # A database restored from an older copy: the files are newer than its record.
    with sqlite3.connect(data_dir / DB_FILE) as conn:
        conn.execute("INSERT OR REPLACE INTO index_snapshots VALUES (?, 'older')", (C,))
    svc = _service(data_dir, spacy_extractor)
    try:
        assert not _store(svc).loaded_from_snapshot(C)
    finally:
        svc.close()


def test_small_collections_keep_no_snapshot_and_stale_ones_are_removed(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    svc = Hippocampus(
        EmbeddedStore(data_dir, synchronous="NORMAL", snapshot_from=1000),
        HashingEmbedder(),
        spacy_extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    try:
        svc.remember(
            C, NewMemory(content="Sentry groups the timeout errors by route", source=OPERATOR)
        )
    finally:
        svc.close()
    assert _recorded(data_dir) == {}
    assert list((data_dir / SNAPSHOTS_FOLDER).iterdir()) == []


def test_snapshot_from_is_checked_and_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hippocampus.errors import ConfigError
    from hippocampus.stores import open_store

    with pytest.raises(ConfigError, match="snapshot_from"):
        EmbeddedStore(tmp_path / "a", snapshot_from=0)
    monkeypatch.setenv("HIPPO_SNAPSHOT_FROM", "77")
    store = open_store(HippoSettings(data_dir=tmp_path / "b"))
    try:
        assert store._snapshot_from == 77  # type: ignore[attr-defined]
    finally:
        store.close()


def graph_behind(store: EmbeddedStore) -> bool:
    """Whether the collection's graph still numbers memories by an older index."""
    return store._graphs[C]._slot_source is not store._indexes[C]


def test_a_graph_saved_after_its_index_was_rebuilt_keeps_to_the_new_slots(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    svc = _service(data_dir, spacy_extractor)
    store = _store(svc)
    try:
        # As a model that changes dimension does: the vector index is built again
        # and numbers its memories anew; the graph follows on its next use.
        old = store._index(C)
        with store._write_lock:
            store._refresh_index(old, [], rebuild=True)
        assert graph_behind(store)
        # Nothing written, but the record gone: the close saves the indexes again.
        with sqlite3.connect(data_dir / DB_FILE) as conn:
            conn.execute("DELETE FROM index_snapshots")
    finally:
        svc.close()
    reopened = _service(data_dir, spacy_extractor)
    try:
        store = _store(reopened)
        assert store.loaded_from_snapshot(C)
        graph, index = store._graph(C), store._index(C)
        for memory_id, slot in index.slot_items():
            assert graph._slot[graph._memory_node[memory_id]] == slot
        assert store.integrity_problems() == []
    finally:
        reopened.close()


def test_an_arrays_room_to_grow_is_left_out_of_the_file_and_loads_as_zeros(
    data_dir: Path, spacy_extractor: SpacyConceptExtractor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshots, "_ROOM_MIN_BYTES", 1)  # any room, however small
    svc = _service(data_dir, spacy_extractor)
    store = _store(svc)
    try:
        answers = _answers(svc)
        graph, index = store._graph(C), store._index(C)
        [part] = index._partitions.values()
        held = {name: getattr(graph, name).copy() for name in ("_nbr", "_eid", "_w")}
        held["vectors"] = part.vectors.copy()
        # Nothing written, but the record gone: the close saves the indexes again.
        with sqlite3.connect(data_dir / DB_FILE) as conn:
            conn.execute("DELETE FROM index_snapshots")
    finally:
        svc.close()
    [folder] = (data_dir / SNAPSHOTS_FOLDER).iterdir()
    for part_name in ("index", "graph"):
        assert b"_roomy" in (folder / f"{part_name}.pickle").read_bytes(), part_name
    reopened = _service(data_dir, spacy_extractor)
    store = _store(reopened)
    try:
        assert store.loaded_from_snapshot(C)
        graph, index = store._graph(C), store._index(C)
        [part] = index._partitions.values()
        for name, array in held.items():
            loaded = part.vectors if name == "vectors" else getattr(graph, name)
            assert loaded.dtype == array.dtype and loaded.shape == array.shape, name
            assert loaded.tobytes() == array.tobytes(), name
        assert _answers(reopened) == answers
        assert store.integrity_problems() == []
    finally:
        reopened.close()


def test_only_trailing_rows_of_zero_bytes_are_room() -> None:
    rows = np.zeros((16384, 64), dtype=np.float32)
    rows[:10] = 1.0
    rows[2000] = -0.0  # zero as a number, not as bytes: kept
    room = snapshots._Room.of(rows)
    assert isinstance(room, snapshots._Room) and room.rows.shape == (2001, 64)
    loaded = snapshots._Unpickler(io.BytesIO(pickle.dumps(room, protocol=5))).load()
    assert loaded.dtype == rows.dtype and loaded.tobytes() == rows.tobytes()
    # Too little room, or none, or not an array of plain values: as it is.
    small = np.zeros(1024, dtype=np.int64)
    full = np.ones((16384, 64), dtype=np.float32)
    for value in (small, full, [0] * 10):
        assert snapshots._Room.of(value) is value
