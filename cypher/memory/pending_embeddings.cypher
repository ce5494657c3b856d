// Memories with no vector, or a vector from another model than $model, oldest first.
MATCH (m:Memory {collection: $collection})
WHERE m.embedding IS NULL OR m.embedding_model IS NULL OR m.embedding_model <> $model
RETURN m.id AS id, m.doc AS doc, m.embedding_model AS embedding_model
ORDER BY m.created_at, m.id
LIMIT $limit
