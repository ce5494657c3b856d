// Overwrite a memory's properties; its vector only when $embedding is given, or
// none at all with $drop_embedding (setting a property to null removes it).
// No row back: no such memory.
MATCH (m:Memory {collection: $collection, id: $id})
SET m += $properties
SET m.embedding = CASE WHEN $drop_embedding THEN null ELSE coalesce($embedding, m.embedding) END,
    m.embedding_model = CASE
      WHEN $drop_embedding THEN null
      WHEN $embedding IS NULL THEN m.embedding_model
      ELSE $embedding_model
    END
RETURN m.id AS id
