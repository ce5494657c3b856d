// Memories with no vector, or a vector from another model than $model, oldest first.
// (The created_at test lets the planner seek memory_created by collection, in
// order: Neo4j uses a composite index only when every property is tested.)
MATCH (m:Memory {collection: $collection})
WHERE m.created_at IS NOT NULL
  AND (m.embedding IS NULL OR m.embedding_model IS NULL OR m.embedding_model <> $model)
RETURN m.id AS id, m.doc AS doc, m.embedding_model AS embedding_model
ORDER BY m.created_at, m.id
LIMIT $limit
