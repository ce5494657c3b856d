// The strongest learned associations of a collection: memories used together
// most, drawn as a graph (edge captions are weights). The hint keeps the planner
// on the collection's memories (memory_key) rather than on every ASSOCIATED
// edge of the database.
MATCH (a:Memory {collection: $collection})-[r:ASSOCIATED]->(b:Memory)
USING INDEX a:Memory(collection, id)
WHERE a.id IS NOT NULL
RETURN a, r, b
ORDER BY r.weight DESC, r.co_occurrences DESC
LIMIT 25
