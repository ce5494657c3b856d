// How many memories memory/pending_embeddings would list with no limit: those
// with no vector, or a vector from another model than $model.
// (The id test lets the planner seek memory_key by collection: Neo4j uses a
// composite index only when every one of its properties is tested.)
MATCH (m:Memory {collection: $collection})
WHERE m.id IS NOT NULL
  AND (m.embedding IS NULL OR m.embedding_model IS NULL OR m.embedding_model <> $model)
RETURN count(m) AS pending
