// Edge counts by type (ASSOCIATED counted once), for setup() to build a
// collection's counters from, once (see schema/count_memories).
// (The id test lets the planner seek memory_key by collection.)
MATCH (m:Memory {collection: $collection})-[r]->()
WHERE m.id IS NOT NULL
RETURN type(r) AS type, count(r) AS n
