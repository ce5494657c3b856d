// Edge counts by type (ASSOCIATED counted once).
// (The id test lets the planner seek memory_key by collection.)
MATCH (m:Memory {collection: $collection})-[r]->()
WHERE m.id IS NOT NULL
RETURN type(r) AS type, count(r) AS n
