"""Snapshots of a collection's in-memory indexes, so that a large collection
starts in seconds rather than minutes.

Every index of a collection (vectors and filters, BM25 text, the walked graph,
due dates) is built from SQLite on the collection's first use: at a million
memories that is minutes of reading rows and parsing them. At close, the
store writes each large collection's indexes here as they stand, and the next
start loads them instead, if and only if nothing of the collection has been
written since.

How "nothing written since" is known: the store records each snapshot it
writes with a random token in the ``index_snapshots`` table, once the files
are on disk. Triggers on every table the indexes are built from delete the
row of a collection in the transaction of any change to its rows, whoever
makes it (the store, or a ``sqlite3`` shell), so a committed write and a
valid snapshot never coexist, whatever crashes when. A snapshot whose token
is not in the table, whose files do not read back, or that another version
of this code wrote (see :func:`code_fingerprint`) is ignored, and the indexes
are built from the rows as before. A snapshot never decides what is stored:
SQLite stays the source of truth, and the integrity check compares loaded
indexes with the tables as it does built ones.

The files are pickles read by an unpickler that resolves only the classes
the indexes are made of (:data:`_ALLOWED`): a file that names anything else
is refused, not run. A large array's room to grow (its trailing rows of zeros)
is left out of the file and comes back as pages never written (see
:class:`_Room`): a loaded index holds no more resident memory than a built
one for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pickle
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hippocampus.store.embedded.due import DueIndex
from hippocampus.store.embedded.folders import write_whole
from hippocampus.store.embedded.graph import CollectionGraph
from hippocampus.store.embedded.index import CollectionIndex
from hippocampus.store.embedded.index_ann import GraphPolicy
from hippocampus.store.embedded.index_storage import Partition
from hippocampus.store.embedded.text_index import TextIndex

logger = logging.getLogger(__name__)

SNAPSHOT_FROM = 50_000
"""Memories from which a collection's indexes are saved at close: below it they
build from the rows in a few seconds, less than writing them costs."""

_FORMAT = 2

# The tables the indexes are built from: a change to any row of a collection
# outdates that collection's snapshot (an update that moves a row, both).
_SOURCE_TABLES = ("memories", "passages", "edges", "hubs", "vector_dims")
_CHANGED = {
    "INSERT": "NEW.collection",
    "UPDATE": "OLD.collection, NEW.collection",
    "DELETE": "OLD.collection",
}
OUTDATING_TRIGGERS = "".join(
    f"""CREATE TRIGGER IF NOT EXISTS {table}_{op.lower()}_outdates_snapshot AFTER {op} ON {table}
WHEN EXISTS (SELECT 1 FROM index_snapshots WHERE collection IN ({changed}))
BEGIN DELETE FROM index_snapshots WHERE collection IN ({changed}); END;
"""
    for table in _SOURCE_TABLES
    for op, changed in _CHANGED.items()
)
"""The triggers that delete a collection's ``index_snapshots`` row in the
transaction of any change to its rows (idempotent: run at every open)."""
_META = "meta.json"
_PARTS = ("index", "text", "graph", "due")

# Attributes of each index that are not its content: locks, the thread that
# builds vector graphs and how, caches recomputed on demand. A snapshot leaves
# them out and a loaded index gets fresh ones.
_INDEX_TRANSIENT = frozenset(
    {"_lock", "_graph_policy", "_graph_worker", "_graph_wake", "_closing", "_samples", "_tier_mask"}
)
_TEXT_TRANSIENT = frozenset({"_tokenize", "_norms"})
_GRAPH_TRANSIENT = frozenset({"_lock", "_slot_source"})
_DUE_TRANSIENT = frozenset({"_lock"})
_PARTITION_TRANSIENT = frozenset({"ann"})

# What a snapshot's pickles may name: the containers the indexes are made of.
_ALLOWED = frozenset(
    {
        ("array", "_array_reconstructor"),
        ("array", "array"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("copyreg", "_reconstructor"),
        ("builtins", "object"),
        ("hippocampus.model", "Tier"),
        ("hippocampus.model.memory", "Tier"),
        ("hippocampus.lexical", "_Postings"),
        ("hippocampus.store.embedded.index_storage", "IndexEntry"),
        ("hippocampus.store.embedded.index_storage", "Passages"),
        ("hippocampus.store.embedded.hub_vectors", "HubVectors"),
        ("hippocampus.store.embedded.hub_vectors", "_Partition"),
        ("hippocampus.store.embedded.snapshots", "_roomy"),
    }
)

# The modules whose classes a snapshot holds, or that decide what they mean.
_SOURCES = (
    "hippocampus.lexical",
    "hippocampus.model",
    "hippocampus.store.embedded.due",
    "hippocampus.store.embedded.graph",
    "hippocampus.store.embedded.graph_expand",
    "hippocampus.store.embedded.graph_layout",
    "hippocampus.store.embedded.graph_paths",
    "hippocampus.store.embedded.graph_walk",
    "hippocampus.store.embedded.hub_vectors",
    "hippocampus.store.embedded.index",
    "hippocampus.store.embedded.index_filters",
    "hippocampus.store.embedded.index_search",
    "hippocampus.store.embedded.index_storage",
    "hippocampus.store.embedded.snapshots",
    "hippocampus.store.embedded.text_index",
)


@dataclass
class Indexes:
    """The in-memory indexes of one collection."""

    index: CollectionIndex
    text: TextIndex
    graph: CollectionGraph
    due: DueIndex


def folder_of(root: Path, collection: str) -> Path:
    """Where the snapshot of ``collection`` is kept under ``root``."""
    return root / hashlib.sha256(collection.encode()).hexdigest()[:24]


@cache
def code_fingerprint() -> str | None:
    """A digest of the source of the modules whose objects a snapshot holds:
    a snapshot is loaded only by the code that wrote it, so a change to any of
    these classes can never meet a snapshot of their former shape. ``None``
    when a source cannot be read (snapshots are then neither written nor read)."""
    import importlib.util

    digest = hashlib.sha256(f"format {_FORMAT}".encode())
    for name in _SOURCES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            return None
        try:
            digest.update(Path(origin).read_bytes())
        except OSError:
            return None
    return digest.hexdigest()


# -- writing ------------------------------------------------------------------------


def save(folder: Path, token: str, built: Indexes) -> None:
    """Write ``built`` into ``folder`` under ``token``, whole or not at all
    (written beside it, flushed to disk, then renamed into place). The caller
    holds the store's write lock: the indexes do not change meanwhile.

    Raises:
        OSError: the files cannot be written (the folder is left as it was).
    """
    fingerprint = code_fingerprint()
    if fingerprint is None:
        raise OSError("the source of the index modules cannot be read")
    # The graph numbers memories by the index's slots; a loaded graph is taken to
    # agree with the index loaded beside it, so it must before it is saved (a
    # rebuilt vector index renumbers them, and the graph follows on its next use).
    built.graph.sync_slots(built.index)
    states = {
        "index": _index_state(built.index),
        "text": _state(built.text._bm25, _TEXT_TRANSIENT),
        "graph": {
            name: _Room.of(value) for name, value in _state(built.graph, _GRAPH_TRANSIENT).items()
        },
        "due": _state(built.due, _DUE_TRANSIENT),
    }
    meta = {
        "format": _FORMAT,
        "token": token,
        "code": fingerprint,
        "collection": built.index.collection,
        "memories": len(built.index),
    }

    def fill(fresh: Path) -> None:
        for part, state in states.items():
            with open(fresh / f"{part}.pickle", "wb") as f:
                pickle.dump(state, f, protocol=5)
        (fresh / _META).write_text(json.dumps(meta), encoding="utf-8")

    write_whole(folder, fill)


def prune(root: Path, keep: set[Path]) -> None:
    """Remove the snapshots under ``root`` other than ``keep`` (those of collections
    no longer recorded: written over since, or deleted)."""
    if not root.is_dir():
        return
    for path in root.iterdir():
        if path not in keep:
            shutil.rmtree(path, ignore_errors=True)


def _state(obj: Any, transient: frozenset[str]) -> dict[str, Any]:
    return {key: value for key, value in vars(obj).items() if key not in transient}


def _index_state(index: CollectionIndex) -> dict[str, Any]:
    state = _state(index, _INDEX_TRANSIENT)
    state["_partitions"] = {
        model: {
            name: _Room.of(getattr(part, name))
            for name in Partition.__slots__
            if name not in _PARTITION_TRANSIENT
        }
        for model, part in index._partitions.items()
    }
    return state


_ROOM_MIN_BYTES = 1 << 20
"""Trailing zero bytes of an array, from which a snapshot leaves them out."""


class _Room:
    """An array that keeps room to grow (rows of zeros past its last row in use:
    the vectors' rows, the graph's adjacency arena), pickled as the rows before
    that room and the whole shape. It loads as the same array, built on zeroed
    memory the system has not written yet, so the room costs neither disk nor
    resident memory until it is used, as in an index built from the rows (at a
    million memories, hundreds of MB)."""

    __slots__ = ("rows", "shape")

    def __init__(self, rows: npt.NDArray[Any], shape: tuple[int, ...]) -> None:
        self.rows = rows
        self.shape = shape

    @staticmethod
    def of(value: Any) -> Any:
        """``value``, or a :class:`_Room` for it when it is an array with at least
        :data:`_ROOM_MIN_BYTES` of trailing zero rows."""
        if (
            not isinstance(value, np.ndarray)
            or value.ndim == 0
            or value.nbytes < _ROOM_MIN_BYTES
            or value.dtype.hasobject
            or not value.flags.c_contiguous
        ):
            return value
        used = _rows_in_use(value)
        if (value.shape[0] - used) * (value.nbytes // value.shape[0]) < _ROOM_MIN_BYTES:
            return value
        return _Room(value[:used], value.shape)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_roomy, (self.rows, self.shape))


def _roomy(rows: npt.NDArray[Any], shape: tuple[int, ...]) -> npt.NDArray[Any]:
    """The array a :class:`_Room` was made from."""
    whole = np.zeros(shape, dtype=rows.dtype)  # large: fresh pages, zero until written
    whole[: rows.shape[0]] = rows
    return whole


def _rows_in_use(value: npt.NDArray[Any]) -> int:
    """How many leading rows of ``value`` end at its last row holding a byte other
    than zero (a float -0.0 counts as held)."""
    end = int(value.shape[0])
    raw: npt.NDArray[np.uint8] = value.reshape(end, -1).view(np.uint8)
    step = max(1, (1 << 22) // max(int(raw.shape[1]), 1))  # about 4 MB a look
    while end > 0:
        start = max(0, end - step)
        held = np.flatnonzero(raw[start:end].any(axis=1))
        if held.size:
            return start + int(held[-1]) + 1
        end = start
    return 0


# -- reading ------------------------------------------------------------------------


def load(
    folder: Path,
    token: str,
    collection: str,
    graphs: GraphPolicy | None,
    text_candidates_from: int | None = None,
) -> Indexes | None:
    """The indexes saved in ``folder`` under ``token``; ``None`` (logged) when
    there is none, it was saved under another token or by other code, or it does
    not read back whole. The vector index's graphs are loaded as at a build, and
    the text index's candidates filled as at a build (from
    ``text_candidates_from`` memories; ``None``: never)."""
    try:
        meta = json.loads((folder / _META).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        logger.warning("no usable index snapshot in %s (%s); building from the rows", folder, e)
        return None
    if not isinstance(meta, Mapping) or meta.get("token") != token:
        logger.warning("the index snapshot in %s is not the one recorded; building", folder)
        return None
    if meta.get("format") != _FORMAT or meta.get("code") != code_fingerprint():
        logger.info("the index snapshot in %s was written by other code; building", folder)
        return None
    if meta.get("collection") != collection:
        logger.warning("the index snapshot in %s is another collection's; building", folder)
        return None
    try:
        states = {part: _read(folder / f"{part}.pickle") for part in _PARTS}
        index = _restore_index(states["index"], collection, graphs)
        text = TextIndex(collection, text_candidates_from)
        _restore(text._bm25, states["text"], _TEXT_TRANSIENT)
        graph = CollectionGraph(collection)
        _restore(graph, states["graph"], _GRAPH_TRANSIENT)
        graph._slot_source = index
        due = DueIndex()
        _restore(due, states["due"], _DUE_TRANSIENT)
    except Exception as e:  # whatever the damage, the rows are the truth
        logger.warning("the index snapshot in %s does not read back (%s); building", folder, e)
        return None
    if len(index) != meta.get("memories") or not (len(index) == len(text) == len(due)):
        logger.warning("the index snapshot in %s is incomplete; building", folder)
        index.close(save=False)
        return None
    index.plan_graphs()
    text.plan_candidates()
    return Indexes(index, text, graph, due)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of an index")
        return super().find_class(module, name)


def _read(path: Path) -> dict[str, Any]:
    with open(path, "rb", buffering=1 << 20) as f:
        state = _Unpickler(f).load()
    if not isinstance(state, dict):
        raise ValueError(f"{path.name} holds no index")
    return state


def _restore(obj: Any, state: dict[str, Any], transient: frozenset[str]) -> None:
    """Give a fresh ``obj`` the saved ``state``, which must name exactly the
    attributes of its content."""
    expected = set(vars(obj)) - transient
    if set(state) != expected:
        raise ValueError(f"{type(obj).__name__} holds other attributes than those saved")
    vars(obj).update(state)


def _restore_index(
    state: dict[str, Any], collection: str, graphs: GraphPolicy | None
) -> CollectionIndex:
    index = CollectionIndex(collection, graphs)
    partitions: dict[str, Partition] = {}
    for model, fields in state["_partitions"].items():
        expected = set(Partition.__slots__) - _PARTITION_TRANSIENT
        if set(fields) != expected:
            raise ValueError("a vector partition holds other attributes than those saved")
        part = Partition(int(fields["dim"]))
        for name, value in fields.items():
            setattr(part, name, value)
        part.ann = None
        partitions[model] = part
    _restore(index, {**state, "_partitions": partitions}, _INDEX_TRANSIENT)
    return index
