// The strongest learned associations of a collection: memories used together
// most, drawn as a graph (edge captions are weights).
MATCH (a:Memory {collection: $collection})-[r:ASSOCIATED]->(b:Memory)
RETURN a, r, b
ORDER BY r.weight DESC, r.co_occurrences DESC
LIMIT 25
