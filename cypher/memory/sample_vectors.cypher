// Up to $size of the collection's memories with a vector of $model, the first
// whose content hash is at least $low and below $high, in hash order. Hashes are
// spread evenly, so the memories from a random hash on are a random sample
// (Neo4jStore._read_sample reads on from there, round to the start if need be).
// The memory_sample index gives them in order, so the read stops after $size
// however large the collection: the planner sees that order only when ORDER BY
// names every property of the index (the first two are fixed here).
MATCH (m:Memory {collection: $collection, embedding_model: $model})
WHERE m.content_hash >= $low AND m.content_hash < $high
RETURN m.id AS id, m.content_hash AS hash, m.embedding AS embedding
ORDER BY m.collection, m.embedding_model, m.content_hash
LIMIT $size
