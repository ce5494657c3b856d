// One document-frequency node per collection, term and shard
// (engine/store/neo4j/counts.py).
CREATE CONSTRAINT term_count_key IF NOT EXISTS
FOR (t:TermCount) REQUIRE (t.collection, t.term, t.shard) IS UNIQUE
