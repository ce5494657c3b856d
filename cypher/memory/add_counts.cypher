// Add a write's changes to the collection's counters, in the same transaction as
// the write: each row of $counts ({key, n}) adds n to the counter `key` in the
// writer's $shard (see engine/store/neo4j/counts.py). Rows come sorted by key,
// so two writers lock shared counters in one order and never deadlock; the SET
// reads the count under the write lock it takes, so no addition is lost.
UNWIND $counts AS row
MERGE (c:Count {collection: $collection, key: row.key, shard: $shard})
SET c.n = coalesce(c.n, 0) + row.n
