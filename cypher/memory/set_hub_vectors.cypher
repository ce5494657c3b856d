// Store name vectors of existing hubs; others are skipped. A hub holds one
// vector, kept as a float32 array (as memory/add_memories explains).
UNWIND $items AS item
CALL (item) {
  MATCH (h:Domain {collection: $collection, name: item.name})
  WHERE item.kind = 'Domain'
  RETURN h
  UNION ALL
  MATCH (h:Trigger {collection: $collection, name: item.name})
  WHERE item.kind = 'Trigger'
  RETURN h
  UNION ALL
  MATCH (h:Concept {collection: $collection, name: item.name})
  WHERE item.kind = 'Concept'
  RETURN h
}
SET h.embedding_model = item.embedding_model
WITH h, item
CALL db.create.setNodeVectorProperty(h, 'embedding', item.embedding)
