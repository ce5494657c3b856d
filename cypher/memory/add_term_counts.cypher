// Add a write's changes to the collection's document frequencies (what BM25's
// idf needs, engine/store/neo4j/counts.py), in the same transaction as the
// write: each row of $counts ({term, n}) adds n to the memories holding `term`,
// in the writer's $shard. Rows come sorted by term and after memory/add_counts,
// so writers lock shared counters in one order and never deadlock.
UNWIND $counts AS row
MERGE (t:TermCount {collection: $collection, term: row.term, shard: $shard})
SET t.n = coalesce(t.n, 0) + row.n
