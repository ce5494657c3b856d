// The stored vectors of the memories among $ids (those that have one), with their
// models, in one row (`vectors`): one list travels faster than a record per memory.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
WHERE m.embedding IS NOT NULL
RETURN collect({id: m.id, embedding_model: m.embedding_model, embedding: m.embedding}) AS vectors
