// The collection's counters (memory/add_counts), each summed over its shards: a
// few nodes per category, tier, edge type, hub kind and event type, however
// many memories the collection holds. (The key and shard tests let the planner
// seek count_key by collection.)
MATCH (c:Count {collection: $collection})
WHERE c.key IS NOT NULL AND c.shard IS NOT NULL
RETURN c.key AS key, sum(c.n) AS n
