// The stored vectors of the memories among $ids whose vector is of $model.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
WHERE m.embedding IS NOT NULL AND m.embedding_model = $model
RETURN m.id AS id, m.embedding AS embedding
