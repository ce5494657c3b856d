// Overwrite a memory's properties; its vector only when $embedding is given
// (kept as a float32 array, as memory/add_memories explains), or none at all
// with $drop_embedding. The vector property is written only then: writing it,
// even to the value it has, takes a lock of the vector index, and two updates
// of one memory (each holding what the other waits for) deadlock.
// No row back: no such memory.
MATCH (m:Memory {collection: $collection, id: $id})
SET m += $properties
FOREACH (_ IN CASE WHEN $drop_embedding THEN [1] ELSE [] END |
  SET m.embedding = null, m.embedding_model = null
)
WITH m
CALL (m) {
  WITH m
  WHERE $embedding IS NOT NULL AND NOT $drop_embedding
  SET m.embedding_model = $embedding_model
  WITH m
  CALL db.create.setNodeVectorProperty(m, 'embedding', $embedding)
}
RETURN m.id AS id
