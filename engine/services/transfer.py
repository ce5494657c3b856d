"""Transfer: export, import, and the state ``hippo migrate`` carries."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from hippocampus.errors import InvalidInputError
from hippocampus.extract.quality import QualityModel
from hippocampus.model import Edge, Memory
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.hubs import hub_edges, retrieval_extraction
from hippocampus.services.quality import FEEDBACK_COUNT_KEY, QUALITY_MODEL_KEY
from hippocampus.store import MemoryRecord, Vector
from hippocampus.surface.conversation import ConversationState
from hippocampus.surface.metrics import SurfaceCounters
from hippocampus.surface.outcomes import (
    CONVERSATION_PREFIX,
    SURFACE_COUNTERS_KEY,
    SURFACE_MODEL_KEY,
    SURFACING_PREFIX,
    Surfacing,
)
from hippocampus.surface.predict import SurfaceModel

EXPORT_FORMAT = "hippocampus-jsonl/3"
_READABLE_FORMATS = frozenset({"hippocampus-jsonl/1", "hippocampus-jsonl/2", EXPORT_FORMAT})
LEARNED_SECTION = "learned"
LEARNED_VERSION = 1
"""Version of the export's learned section (the state documents after the
``{"type": "section", "name": "learned", "version": 1}`` record): bumped when
the documents it holds change shape."""


PORTABLE_STATE = (
    QUALITY_MODEL_KEY,
    FEEDBACK_COUNT_KEY,
    SURFACE_MODEL_KEY,
    SURFACE_COUNTERS_KEY,
)
"""State documents that export and ``hippo migrate`` carry with a collection: what
was learned from it and cannot be rebuilt from its memories (the quality model;
surfacing's topic, need, bandit, threshold and confidence models and its
counters)."""
PORTABLE_STATE_PREFIXES = (CONVERSATION_PREFIX, SURFACING_PREFIX)
"""Families of state documents carried too: every conversation's state and every
surfacing record, so engagement of an offer made before the move still teaches."""


class ImportReport(BaseModel):
    memories: int = 0
    edges: int = 0
    skipped_existing: int = 0


class _ExportedMemory(BaseModel):
    type: str = Field(pattern="^memory$")
    memory: Memory
    vector: str | None = None
    # The vectors of a long memory's passages after its first (older exports have none).
    passages: list[str] = Field(default_factory=list)


class _ExportedEdge(BaseModel):
    type: str = Field(pattern="^edge$")
    edge: Edge


class _ExportedState(BaseModel):
    type: str = Field(pattern="^state$")
    key: str = Field(min_length=1, max_length=200)
    value: dict[str, Any]


class TransferService:
    """Exporting and importing collections.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
    """

    def __init__(self, context: Context, checks: Checks) -> None:
        self._context = context
        self._checks = checks

    def export_lines(self, collection: str) -> Iterator[str]:
        """:meth:`export` as the file holds it: one JSON object a line, each ended
        by a newline (what ``hippo export`` writes and ``GET /export`` streams)."""
        for record in self.export(collection):
            yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"

    def export(self, collection: str) -> Iterator[dict[str, Any]]:
        """The collection as JSON-ready records: a header, then every memory with its
        vector (tier, provenance and counts included), then every edge (conflicts
        included), then the learned quality model. :meth:`import_records` restores
        it exactly."""
        self._checks.check_collection(collection)
        yield {"type": "header", "format": EXPORT_FORMAT, "collection": collection}
        edge_ids: list[str] = []
        batch: list[Memory] = []

        def flush() -> Iterator[dict[str, Any]]:
            ids = [m.id for m in batch]
            vectors = self._context.store.get_vectors(collection, ids)
            passage_vectors = self._context.store.get_passages(collection, ids)
            for m in batch:
                vec = vectors.get(m.id)
                record: dict[str, Any] = {
                    "type": "memory",
                    "memory": m.model_dump(mode="json"),
                    "vector": _encode_vector(vec) if vec is not None else None,
                }
                rows = passage_vectors.get(m.id)
                if rows is not None and vec is not None:
                    record["passages"] = [_encode_vector(row) for row in rows]
                yield record
            edge_ids.extend(m.id for m in batch)
            batch.clear()

        for memory in self._context.store.iter_memories(collection):
            batch.append(memory)
            if len(batch) >= 500:
                yield from flush()
        yield from flush()
        seen: set[tuple[str, str, str]] = set()
        for mid in edge_ids:
            for edge in self._context.store.edges_of(collection, mid):
                key = (edge.type.value, edge.source, edge.target)
                if key not in seen:
                    seen.add(key)
                    yield {"type": "edge", "edge": edge.model_dump(mode="json")}
        # The learned section: its header comes before its first document, and
        # not at all for a collection that has learned nothing.
        section = {"type": "section", "name": LEARNED_SECTION, "version": LEARNED_VERSION}
        keys = self.portable_state_keys(collection)
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            stored = self._context.store.get_states(collection, chunk)
            for state_key in chunk:
                if state_key in stored:
                    if section:
                        yield section
                        section = {}
                    yield {"type": "state", "key": state_key, "value": stored[state_key]}

    def portable_state_keys(self, collection: str) -> list[str]:
        """Keys of the state documents that travel with the collection (export,
        ``hippo migrate``): :data:`PORTABLE_STATE` and every document of the
        :data:`PORTABLE_STATE_PREFIXES` families it holds."""
        keys = list(PORTABLE_STATE)
        for prefix in PORTABLE_STATE_PREFIXES:
            keys.extend(self._context.store.list_state_keys(collection, prefix))
        return keys

    def import_records(
        self,
        collection: str,
        records: Iterable[dict[str, Any]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Load records written by :meth:`export` into ``collection`` (which may
        differ from the exported one). Memories whose id already exists are
        skipped; their edges are restored with the weights they had. A learned
        model is restored unless the collection already has one.

        Raises:
            InvalidInputError: a record is malformed (``field`` names its line).
        """
        self._checks.check_collection(collection)
        report = ImportReport()
        pending: list[MemoryRecord] = []
        edges: list[Edge] = []
        states: list[_ExportedState] = []

        def flush() -> None:
            if not pending:
                return
            ids = [r.memory.id for r in pending]
            existing = self._context.store.get_memories(collection, ids)
            fresh = [r for r in pending if r.memory.id not in existing]
            report.skipped_existing += len(pending) - len(fresh)
            if fresh:
                self._context.store.add_memories(collection, fresh)
            report.memories += len(fresh)
            if progress is not None:
                progress(len(pending))
            pending.clear()

        for line, record in enumerate(records, start=1):
            kind = record.get("type") if isinstance(record, dict) else None
            try:
                if kind == "header":
                    _check_header(record, line)
                elif kind == "memory":
                    pending.append(_imported_memory(record, collection))
                    if len(pending) >= 500:
                        flush()
                elif kind == "edge":
                    edges.append(_ExportedEdge.model_validate(record).edge)
                elif kind == "section":
                    _check_section(record, line)
                elif kind == "state":
                    state = _ExportedState.model_validate(record)
                    _check_portable_state(state.key, state.value, f"line {line}")
                    states.append(state)
                else:
                    raise InvalidInputError(f"unknown record type {kind!r}", field=f"line {line}")
            except (ValidationError, ValueError) as e:
                raise InvalidInputError(f"line {line}: {e}", field=f"line {line}") from e
        flush()
        report.edges = self._import_rest(collection, edges, states)
        return report

    def _import_rest(self, collection: str, edges: list[Edge], states: list[_ExportedState]) -> int:
        """Write an import's edges, then its state documents the collection does
        not hold yet; returns how many edges were written."""
        for i in range(0, len(edges), 1000):
            self._context.store.upsert_edges(collection, edges[i : i + 1000])
        for i in range(0, len(states), 500):
            chunk = states[i : i + 500]
            held = self._context.store.get_states(collection, [s.key for s in chunk])
            self._context.store.put_states(
                collection, {s.key: s.value for s in chunk if s.key not in held}
            )
        return len(edges)


_PORTABLE_SHAPES: dict[str, type[BaseModel]] = {
    QUALITY_MODEL_KEY: QualityModel,
    SURFACE_MODEL_KEY: SurfaceModel,
    SURFACE_COUNTERS_KEY: SurfaceCounters,
    CONVERSATION_PREFIX: ConversationState,
    SURFACING_PREFIX: Surfacing,
}


def _check_portable_state(key: str, value: dict[str, Any], where: str) -> None:
    """An imported state document: a portable key, and the shape its reader expects.

    Raises:
        InvalidInputError: another key. ValidationError: a document of the wrong shape.
    """
    family = next((p for p in PORTABLE_STATE_PREFIXES if key.startswith(p)), key)
    if key not in PORTABLE_STATE and family == key:
        raise InvalidInputError(f"unknown state {key!r}", field=where)
    shape = _PORTABLE_SHAPES.get(family)
    if shape is not None:
        shape.model_validate(value)


def _check_header(record: dict[str, Any], line: int) -> None:
    """An export's header names a format this version reads.

    Raises:
        InvalidInputError: another format.
    """
    if record.get("format") not in _READABLE_FORMATS:
        raise InvalidInputError(
            f"unknown export format {record.get('format')!r}", field=f"line {line}"
        )


def _check_section(record: dict[str, Any], line: int) -> None:
    """A section header names the learned section, at the version this reads.

    Raises:
        InvalidInputError: another section or version.
    """
    if record.get("name") != LEARNED_SECTION or record.get("version") != LEARNED_VERSION:
        raise InvalidInputError(
            f"unknown section {record.get('name')!r} version {record.get('version')!r}",
            field=f"line {line}",
        )


def _imported_memory(record: dict[str, Any], collection: str) -> MemoryRecord:
    """An exported memory as the record that stores it in ``collection``: without
    a vector, it waits for re-embedding.

    Raises:
        ValidationError, ValueError: a malformed record or vector.
    """
    item = _ExportedMemory.model_validate(record)
    mem = item.memory.model_copy(update={"collection": collection})
    vec = _decode_vector(item.vector) if item.vector is not None else None
    rows = None
    if vec is None:
        mem = mem.model_copy(update={"embedding_model": None, "embedding_generated_at": None})
    elif item.passages:
        rows = np.vstack([_decode_vector(p) for p in item.passages])
    return MemoryRecord(memory=mem, vector=vec, edges=_hub_edges_of(mem), passages=rows)


def _hub_edges_of(memory: Memory) -> list[Edge]:
    return hub_edges(memory.id, retrieval_extraction(memory.retrieval), memory.created_at)


def _encode_vector(vector: Vector) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decode_vector(text: str) -> Vector:
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 4:
        raise ValueError("a vector's byte length is not a multiple of 4")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)
