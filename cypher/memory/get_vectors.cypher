// The stored vectors of the memories among $ids (those that have one).
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
WHERE m.embedding IS NOT NULL
RETURN m.id AS id, m.embedding AS embedding
