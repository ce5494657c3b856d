// Replace the passages of existing memories. Each row of $items names a memory
// (id), the model of its vectors and the vectors of its passages after the
// first, in order (an empty list: it has none). Ids that name no memory are
// skipped. Vectors are kept as float32 arrays, as memory/add_memories explains.
UNWIND $items AS item
MATCH (m:Memory {collection: $collection, id: item.id})
CALL (m) {
  MATCH (old:Passage {collection: $collection, memory_id: m.id})
  WHERE old.n IS NOT NULL
  DETACH DELETE old
}
WITH m, item
UNWIND range(0, size(item.passages) - 1) AS i
CREATE (p:Passage {
  collection: $collection,
  memory_id: m.id,
  n: i + 1,
  model: item.model
})-[:PART_OF]->(m)
WITH p, item.passages[i] AS vector
CALL db.create.setNodeVectorProperty(p, 'embedding', vector)
