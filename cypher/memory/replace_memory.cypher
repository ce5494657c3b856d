// Overwrite a memory's properties; its vector only when $embedding is given.
// No row back: no such memory.
MATCH (m:Memory {collection: $collection, id: $id})
SET m += $properties
SET m.embedding = coalesce($embedding, m.embedding),
    m.embedding_model = CASE WHEN $embedding IS NULL THEN m.embedding_model ELSE $embedding_model END
RETURN m.id AS id
