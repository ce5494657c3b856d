"""Settings: the one place the environment is read.

Every variable starts with ``HIPPO_``; nested groups use ``__``
(``HIPPO_NEO4J__URI``). Library classes never read the environment: they take
explicit arguments, and :class:`HippoSettings` is built by the entry points
(the API app factory and the CLI).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hippocampus.errors import ConfigError
from hippocampus.extract.dedup import DedupConfig
from hippocampus.extract.quality import QualityConfig
from hippocampus.learn.rules import LearningConfig
from hippocampus.learn.tiers import TierPolicy
from hippocampus.model.event import EventRetention
from hippocampus.store.embedded.index_ann import APPROXIMATE_FROM
from hippocampus.store.embedded.snapshots import SNAPSHOT_FROM
from hippocampus.store.embedded.text_candidates import CANDIDATES_FROM
from hippocampus.surface.rules import SurfaceConfig

# \Z, not $: $ also matches before a final newline, which "team:a\n" would slip through.
COLLECTION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}\Z")


class Neo4jSettings(BaseModel):
    """Where the Neo4j store lives and how patient it is.

    Attributes:
        max_retry_s: how long a transaction is retried (with backoff) on transient
            errors before the call fails with 503: a request waits at most about
            this long while Neo4j is away.
        timeout_s: how long opening a connection may take.
        vector_dimensions: the dimension of the vector index; by default that of
            the configured embedding model.
    """

    uri: str = "bolt://localhost:7687"
    user: str = "neo4j"
    password: str = Field(default="", repr=False)
    database: str = "neo4j"
    max_retry_s: float = Field(default=5.0, ge=0.0)
    timeout_s: float = Field(default=5.0, gt=0.0)
    vector_dimensions: int | None = Field(default=None, ge=1)


class Limits(BaseModel):
    """Size limits applied to every input, API and CLI alike.

    Content longer than ``passage_chars`` is embedded passage by passage (cut at
    paragraph, sentence or word breaks, each repeating ``passage_overlap``
    characters of the one before), so every part of it can be found by dense
    search; ``passage_chars`` is about what all-MiniLM-L6-v2's 256 word pieces
    hold. ``max_content_chars`` bounds the embedding work of one memory (about
    32 passages at the defaults).
    """

    max_content_chars: int = 32_000
    passage_chars: int = Field(default=1_000, ge=100)
    passage_overlap: int = Field(default=150, ge=0)
    max_source_chars: int = 200
    max_id_chars: int = 200
    max_title_chars: int = 500
    max_custom_fields: int = 50
    max_custom_field_chars: int = 1_000
    max_query_chars: int = 2_000
    max_batch: int = 1_000
    max_tags: int = 50
    max_tag_chars: int = 100
    max_recall_limit: int = 100
    max_body_bytes: int = 16 * 1024 * 1024

    @model_validator(mode="after")
    def _overlap_below_half_a_passage(self) -> Limits:
        if self.passage_overlap * 2 >= self.passage_chars:
            raise ValueError("passage_overlap must be less than half of passage_chars")
        return self


class AdmissionSettings(BaseModel):
    """How many heavy requests the server executes at once (searches, conversation
    messages, remembering: the requests that embed, extract or search); the others
    wait their turn without holding a thread. Cheap requests (engagement, feedback,
    reads by id, forgetting) are never held back.

    Attributes:
        slots: heavy requests executing at once; 0 executes every request as it
            comes. By default 1 with the embedded store, whose searches and writes
            all run in the server process under one interpreter lock, and 0 with
            Neo4j, whose requests mostly wait on the database.
        max_wait_s: a heavy request that waited this long for its turn is answered
            503 with ``Retry-After``.
    """

    slots: int | None = Field(default=None, ge=0)
    max_wait_s: float = Field(default=30.0, gt=0.0)

    def slots_for(self, store: Literal["embedded", "neo4j"]) -> int:
        """The configured slots, or the default for ``store``."""
        if self.slots is not None:
            return self.slots
        return 1 if store == "embedded" else 0


class HippoSettings(BaseSettings):
    """Everything configurable, read from ``HIPPO_*`` variables.

    Attributes:
        store: ``embedded`` (SQLite + in-memory index, zero setup) or ``neo4j``.
        data_dir: where the embedded store keeps its files.
        embedder: ``minilm`` (all-MiniLM-L6-v2 from the installed package) or
            ``hashing`` (deterministic, no model).
        model_path: load the sentence-transformers model from this folder instead.
        api_keys: ``KEY=collection,collection;KEY2=*``. Empty: loopback only.
        approximate_from: the embedded store's vectors of one model in one
            collection from which vector search goes through an HNSW graph
            (candidates scored exactly); below it every search is an exact scan.
        snapshot_from: the embedded store's memories in one collection from
            which its in-memory indexes are saved at shutdown, so the next start
            loads them rather than building them from the rows (when nothing was
            written in between).
        text_candidates_from: the embedded store's memories in one collection
            from which its text searches take their candidates from tantivy
            (scored exactly by the store's BM25); below it BM25 scores every
            matching memory.
        maintenance_interval_s: how often the server writes what retrievals taught
            and runs the (once a day) edge decay and tier passes; 0 turns the
            schedule off.
        scheduler: spaced repetition: ``fsrs`` (stability-based, learns from
            engagement) or ``seed`` (days since last use / (uses + 1) >= 0.7).
        quality: the quality gate (``HIPPO_QUALITY__MIN_SCORE``,
            ``HIPPO_QUALITY__SOURCE_TRUST='{"human": 1.0}'`` ...).
        dedup: when a memory duplicates or contradicts a stored one.
        tiers: when memories are archived or quarantined.
        events: how much of each collection's event log the maintenance pass
            keeps (``HIPPO_EVENTS__MAX_AGE_DAYS``, ``HIPPO_EVENTS__MAX_EVENTS``).
        graph_health_max_age_s: how old the graph health ``/stats`` shows may
            grow before the maintenance round computes it again (seconds at
            100k memories, so it is kept rather than computed per request).
        records_min_score: the least similarity a record needs to be returned by
            ``/ai/rag-search``.
        summary_min_score: the least similarity a result needs to appear in a
            recall's ``format: "summary"`` block (the seed's 0.7).
        admission: how many heavy requests execute at once
            (``HIPPO_ADMISSION__SLOTS``, ``HIPPO_ADMISSION__MAX_WAIT_S``).
        learning: how recalls and use teach the edges, and how they decay
            (``HIPPO_LEARNING__CO_RETRIEVED``, ``HIPPO_LEARNING__DECAY__STEP`` ...).
        surfacing: the gates, thresholds and learning rates of proactive
            surfacing (``HIPPO_SURFACING__MAX_INSIGHTS``,
            ``HIPPO_SURFACING__THRESHOLDS='{"debugging": 0.5}'``,
            ``HIPPO_SURFACING__LEARN=false`` for the fixed baseline ...).
    """

    model_config = SettingsConfigDict(
        env_prefix="HIPPO_", env_nested_delimiter="__", hide_input_in_errors=True
    )

    store: Literal["embedded", "neo4j"] = "embedded"
    data_dir: Path = Path("hippo-data")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    embedder: Literal["minilm", "hashing"] = "minilm"
    model_path: Path | None = None
    embed_batch_size: int = Field(default=64, ge=1, le=4096)
    embed_precision: Literal["auto", "fp32", "bf16"] = "auto"
    # Secrets stay out of repr (logs, tracebacks) and out of validation errors.
    api_keys: str = Field(default="", repr=False)
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL"
    approximate_from: int = Field(default=APPROXIMATE_FROM, ge=1)
    snapshot_from: int = Field(default=SNAPSHOT_FROM, ge=1)
    text_candidates_from: int = Field(default=CANDIDATES_FROM, ge=1)
    log_level: str = "INFO"
    maintenance_interval_s: float = Field(default=60.0, ge=0.0)
    graph_health_max_age_s: float = Field(default=600.0, ge=0.0)
    scheduler: Literal["fsrs", "seed"] = "fsrs"
    limits: Limits = Limits()
    quality: QualityConfig = QualityConfig()
    dedup: DedupConfig = DedupConfig()
    tiers: TierPolicy = TierPolicy()
    events: EventRetention = EventRetention()
    records_min_score: float = Field(default=0.3, ge=-1.0, le=1.0)
    summary_min_score: float = Field(default=0.7, ge=-1.0, le=1.0)
    neo4j: Neo4jSettings = Neo4jSettings()
    admission: AdmissionSettings = AdmissionSettings()
    learning: LearningConfig = LearningConfig()
    surfacing: SurfaceConfig = SurfaceConfig()

    @field_validator("api_keys")
    @classmethod
    def _keys_parse(cls, value: str) -> str:
        parse_api_keys(value)
        return value

    def key_map(self) -> dict[str, frozenset[str] | None]:
        """The API keys and the collections each may touch (``None``: all)."""
        return parse_api_keys(self.api_keys)

    def environment(self) -> dict[str, str]:
        """These settings as ``HIPPO_*`` variables that read back as equal
        settings: every field, a group as JSON. How a process hands its whole
        configuration (flags included) to processes that build theirs from the
        environment, as a server's worker processes do."""
        variables: dict[str, str] = {}
        for name, value in self.model_dump(mode="json").items():
            if value is None:
                continue
            text = value if isinstance(value, str) else json.dumps(value)
            variables[f"HIPPO_{name.upper()}"] = text
        return variables


def parse_api_keys(spec: str) -> dict[str, frozenset[str] | None]:
    """Parse ``KEY=c1,c2;KEY2=*`` into ``{key: collections}``; ``*`` gives ``None`` (all).

    Raises:
        ConfigError: on an entry without ``=``, an empty key, or a bad collection name.
    """
    keys: dict[str, frozenset[str] | None] = {}
    for raw in spec.split(";"):
        entry = raw.strip()
        if not entry:
            continue
        key, sep, scope = entry.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError("HIPPO_API_KEYS entries look like KEY=collection,collection or KEY=*")
        if len(key) < 8:
            raise ConfigError("HIPPO_API_KEYS: every key needs at least 8 characters")
        names = [c.strip() for c in scope.split(",") if c.strip()]
        if names == ["*"]:
            keys[key] = None
            continue
        if not names:
            raise ConfigError("HIPPO_API_KEYS: a key must name its collections, or *")
        for name in names:
            if not COLLECTION_PATTERN.match(name):
                raise ConfigError(f"HIPPO_API_KEYS: {name!r} is not a valid collection name")
        keys[key] = frozenset(names)
    return keys
