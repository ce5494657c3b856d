// One counter node per collection, key and shard (engine/store/neo4j/counts.py).
CREATE CONSTRAINT count_key IF NOT EXISTS
FOR (c:Count) REQUIRE (c.collection, c.key, c.shard) IS UNIQUE
