// Hubs with no name vector from $model, by kind then name.
// (The name tests let the planner seek each hub key by collection.)
CALL () {
  MATCH (h:Domain {collection: $collection})
  WHERE h.name IS NOT NULL
  RETURN 'Domain' AS kind, h
  UNION ALL
  MATCH (h:Trigger {collection: $collection})
  WHERE h.name IS NOT NULL
  RETURN 'Trigger' AS kind, h
  UNION ALL
  MATCH (h:Concept {collection: $collection})
  WHERE h.name IS NOT NULL
  RETURN 'Concept' AS kind, h
}
WITH kind, h
WHERE h.embedding IS NULL OR h.embedding_model IS NULL OR h.embedding_model <> $model
RETURN kind, h.name AS name
ORDER BY kind, name
LIMIT $limit
