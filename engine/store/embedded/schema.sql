-- The embedded store's tables, schema version 2. Run at every open: idempotent.
-- SQLite is the source of truth; the in-memory vector index and graph are rebuilt
-- from it. An older database is migrated by graph_sql.migrate after this script,
-- so nothing here may name a column that a migration adds.

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '2');

-- doc is Memory.model_dump_json(); the columns beside it are copies kept for
-- filtering and ordering. doc's embedding_model always equals vector_model.
CREATE TABLE IF NOT EXISTS memories (
    collection   TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    doc          TEXT    NOT NULL,
    category     TEXT    NOT NULL,
    tier         TEXT    NOT NULL,
    content_hash TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,  -- microseconds since the Unix epoch, UTC
    vector       BLOB,              -- float32, native byte order, as given (not normalized)
    vector_model TEXT,
    PRIMARY KEY (collection, id)
);
CREATE INDEX IF NOT EXISTS memories_by_hash ON memories (collection, content_hash);
CREATE INDEX IF NOT EXISTS memories_by_created ON memories (collection, created_at);

-- The vectors of a long memory's passages after its first (n = 1, 2, ...; the
-- first passage's is memories.vector), of the memory's vector_model and
-- dimension. Written and deleted with the memory's vector. A table of its own
-- (no column of memories), so a database of any schema version gets it here.
CREATE TABLE IF NOT EXISTS passages (
    collection TEXT    NOT NULL,
    memory_id  TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    model      TEXT    NOT NULL,
    vector     BLOB    NOT NULL,   -- float32, native byte order, as given
    PRIMARY KEY (collection, memory_id, n)
);

-- Per collection and model, the dimension of its most recently written vector.
-- Only vectors of that dimension are indexed; the others wait to be re-embedded.
CREATE TABLE IF NOT EXISTS vector_dims (
    collection TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dim        INTEGER NOT NULL,
    PRIMARY KEY (collection, model)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS hubs (
    collection   TEXT NOT NULL,
    kind         TEXT NOT NULL,     -- Domain | Trigger | Concept
    name         TEXT NOT NULL,
    vector       BLOB,              -- the name's embedding, float32, as given
    vector_model TEXT,
    PRIMARY KEY (collection, kind, name)
) WITHOUT ROWID;

-- Hub edges (IN_DOMAIN, HAS_TRIGGER, ABOUT): target is the hub's name.
-- Memory edges (ASSOCIATED, CONFLICTS_WITH, SUPERSEDES, SYNTHESIZED_FROM, NEXT): target
-- is a memory id.
-- ASSOCIATED is undirected and stored once, with source < target.
-- The key leads with source so "edges of a memory" needs no second index.
CREATE TABLE IF NOT EXISTS edges (
    collection       TEXT    NOT NULL,
    source           TEXT    NOT NULL,
    type             TEXT    NOT NULL,
    target           TEXT    NOT NULL,
    weight           REAL    NOT NULL,
    co_occurrences   INTEGER NOT NULL,
    last_co_occurred TEXT,              -- ISO 8601
    kind             TEXT,
    created_at       INTEGER NOT NULL,  -- microseconds since the Unix epoch, UTC
    used_at          INTEGER NOT NULL,  -- last_co_occurred as microseconds, else created_at
    PRIMARY KEY (collection, source, type, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_target ON edges (collection, target);

-- Decay passes applied, one row per (collection, period): a pass is idempotent
-- per period.
CREATE TABLE IF NOT EXISTS decay_periods (
    collection    TEXT    NOT NULL,
    period        TEXT    NOT NULL,
    unused_before INTEGER NOT NULL, -- the cutoff, microseconds since the Unix epoch
    decayed       INTEGER NOT NULL, -- edges that lost weight
    PRIMARY KEY (collection, period)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    type       TEXT NOT NULL,
    at         TEXT NOT NULL,       -- ISO 8601
    memory_ids TEXT NOT NULL,       -- JSON array
    payload    TEXT NOT NULL        -- JSON object
);
CREATE INDEX IF NOT EXISTS events_by_collection ON events (collection, seq);

-- Small JSON documents kept beside the graph: conversation state, surfacings,
-- learned models (surfacing, the quality gate), maintenance bookkeeping
-- (GraphStore.get_states / put_states).
CREATE TABLE IF NOT EXISTS states (
    collection TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,       -- JSON object
    PRIMARY KEY (collection, key)
) WITHOUT ROWID;

-- Running totals per collection, kept by triggers in the transaction of every
-- write, so stats() reads them without a scan: the quality scores of the
-- memories that have one (their count and sum: /stats average_quality) and the
-- events by type (retrievals among them). A database from before these tables
-- is counted once, the first time it opens with them (the meta rows say so; a
-- count cut short by a crash is simply made again).
CREATE TABLE IF NOT EXISTS quality_totals (
    collection TEXT    PRIMARY KEY,
    scored     INTEGER NOT NULL,
    total      REAL    NOT NULL
) WITHOUT ROWID;
INSERT OR REPLACE INTO quality_totals (collection, scored, total)
    SELECT collection, count(q), coalesce(sum(q), 0.0)
    FROM (SELECT collection, json_extract(doc, '$.retrieval.quality_score') AS q FROM memories)
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'quality_totals')
    GROUP BY collection;
INSERT OR IGNORE INTO meta (key, value) VALUES ('quality_totals', '1');

CREATE TRIGGER IF NOT EXISTS quality_totals_insert AFTER INSERT ON memories
WHEN json_extract(NEW.doc, '$.retrieval.quality_score') IS NOT NULL
BEGIN
    INSERT INTO quality_totals (collection, scored, total)
        VALUES (NEW.collection, 1, json_extract(NEW.doc, '$.retrieval.quality_score'))
        ON CONFLICT (collection) DO UPDATE
        SET scored = scored + 1, total = total + excluded.total;
END;
CREATE TRIGGER IF NOT EXISTS quality_totals_delete AFTER DELETE ON memories
WHEN json_extract(OLD.doc, '$.retrieval.quality_score') IS NOT NULL
BEGIN
    UPDATE quality_totals
        SET scored = scored - 1, total = total - json_extract(OLD.doc, '$.retrieval.quality_score')
        WHERE collection = OLD.collection;
END;
CREATE TRIGGER IF NOT EXISTS quality_totals_update AFTER UPDATE OF doc ON memories
WHEN json_extract(OLD.doc, '$.retrieval.quality_score')
     IS NOT json_extract(NEW.doc, '$.retrieval.quality_score')
BEGIN
    UPDATE quality_totals
        SET scored = scored - 1, total = total - json_extract(OLD.doc, '$.retrieval.quality_score')
        WHERE collection = OLD.collection
          AND json_extract(OLD.doc, '$.retrieval.quality_score') IS NOT NULL;
    INSERT INTO quality_totals (collection, scored, total)
        SELECT NEW.collection, 1, json_extract(NEW.doc, '$.retrieval.quality_score')
        WHERE json_extract(NEW.doc, '$.retrieval.quality_score') IS NOT NULL
        ON CONFLICT (collection) DO UPDATE
        SET scored = scored + 1, total = total + excluded.total;
END;

CREATE TABLE IF NOT EXISTS event_totals (
    collection TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (collection, type)
) WITHOUT ROWID;
INSERT OR REPLACE INTO event_totals (collection, type, n)
    SELECT collection, type, count(*) FROM events
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'event_totals')
    GROUP BY collection, type;
INSERT OR IGNORE INTO meta (key, value) VALUES ('event_totals', '1');

CREATE TRIGGER IF NOT EXISTS event_totals_insert AFTER INSERT ON events
BEGIN
    INSERT INTO event_totals (collection, type, n) VALUES (NEW.collection, NEW.type, 1)
        ON CONFLICT (collection, type) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS event_totals_delete AFTER DELETE ON events
BEGIN
    UPDATE event_totals SET n = n - 1 WHERE collection = OLD.collection AND type = OLD.type;
END;

-- Edges by type and hubs by kind, per collection, counted as rows come and go:
-- stats() reads them rather than counting millions of edge rows per request.
-- Filled once from the tables (an older database), then kept by the triggers.
CREATE TABLE IF NOT EXISTS edge_totals (
    collection TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (collection, type)
) WITHOUT ROWID;
INSERT OR REPLACE INTO edge_totals (collection, type, n)
    SELECT collection, type, count(*) FROM edges
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'edge_totals')
    GROUP BY collection, type;
INSERT OR IGNORE INTO meta (key, value) VALUES ('edge_totals', '1');

CREATE TRIGGER IF NOT EXISTS edge_totals_insert AFTER INSERT ON edges
BEGIN
    INSERT INTO edge_totals (collection, type, n) VALUES (NEW.collection, NEW.type, 1)
        ON CONFLICT (collection, type) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS edge_totals_delete AFTER DELETE ON edges
BEGIN
    UPDATE edge_totals SET n = n - 1 WHERE collection = OLD.collection AND type = OLD.type;
END;

CREATE TABLE IF NOT EXISTS hub_totals (
    collection TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (collection, kind)
) WITHOUT ROWID;
INSERT OR REPLACE INTO hub_totals (collection, kind, n)
    SELECT collection, kind, count(*) FROM hubs
    WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'hub_totals')
    GROUP BY collection, kind;
INSERT OR IGNORE INTO meta (key, value) VALUES ('hub_totals', '1');

CREATE TRIGGER IF NOT EXISTS hub_totals_insert AFTER INSERT ON hubs
BEGIN
    INSERT INTO hub_totals (collection, kind, n) VALUES (NEW.collection, NEW.kind, 1)
        ON CONFLICT (collection, kind) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS hub_totals_delete AFTER DELETE ON hubs
BEGIN
    UPDATE hub_totals SET n = n - 1 WHERE collection = OLD.collection AND kind = OLD.kind;
END;

-- Events the retention dropped (events.compact), by type: event_totals counts
-- the events the log holds, and the log's totals (stats) are the two together,
-- so compaction never changes them.
CREATE TABLE IF NOT EXISTS events_compacted (
    collection TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (collection, type)
) WITHOUT ROWID;

-- The collections whose in-memory indexes were saved at close, each under the
-- token its snapshot files carry (snapshots.py). Any change to a table the
-- indexes are built from deletes its collection's row, in the change's own
-- transaction, whoever makes it: a snapshot is loaded only while nothing of
-- its collection has been written since it was taken.
CREATE TABLE IF NOT EXISTS index_snapshots (
    collection TEXT PRIMARY KEY,
    token      TEXT NOT NULL
) WITHOUT ROWID;
-- The triggers that delete them: snapshots.OUTDATING_TRIGGERS, run after this.
