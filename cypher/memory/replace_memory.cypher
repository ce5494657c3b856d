// Overwrite a memory's properties; its vector only when $embedding is given, or
// none at all with $drop_embedding. The vector property is written only then:
// writing it, even to the value it has, takes a lock of the vector index, and
// two updates of one memory (each holding what the other waits for) deadlock.
// No row back: no such memory.
MATCH (m:Memory {collection: $collection, id: $id})
SET m += $properties
FOREACH (_ IN CASE WHEN $drop_embedding THEN [1] ELSE [] END |
  SET m.embedding = null, m.embedding_model = null
)
FOREACH (_ IN CASE WHEN $embedding IS NOT NULL AND NOT $drop_embedding THEN [1] ELSE [] END |
  SET m.embedding = $embedding, m.embedding_model = $embedding_model
)
RETURN m.id AS id
