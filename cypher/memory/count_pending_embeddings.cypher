// How many memories memory/pending_embeddings would list with no limit: those
// with no vector, or a vector from another model than $model.
MATCH (m:Memory {collection: $collection})
WHERE m.embedding IS NULL OR m.embedding_model IS NULL OR m.embedding_model <> $model
RETURN count(m) AS pending
