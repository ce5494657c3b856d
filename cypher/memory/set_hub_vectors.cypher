// Store name vectors of existing hubs; others are skipped. A hub holds one vector.
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
SET h.embedding = item.embedding,
    h.embedding_model = item.embedding_model
