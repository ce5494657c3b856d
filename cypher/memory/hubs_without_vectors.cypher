// Hubs with no name vector from $model, by kind then name.
CALL () {
  MATCH (h:Domain {collection: $collection})
  RETURN 'Domain' AS kind, h
  UNION ALL
  MATCH (h:Trigger {collection: $collection})
  RETURN 'Trigger' AS kind, h
  UNION ALL
  MATCH (h:Concept {collection: $collection})
  RETURN 'Concept' AS kind, h
}
WITH kind, h
WHERE h.embedding IS NULL OR h.embedding_model IS NULL OR h.embedding_model <> $model
RETURN kind, h.name AS name
ORDER BY kind, name
LIMIT $limit
