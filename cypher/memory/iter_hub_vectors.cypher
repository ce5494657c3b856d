// Every hub that has a name vector, by kind then name.
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
WHERE h.embedding IS NOT NULL
RETURN kind, h.name AS name, h.embedding AS embedding, h.embedding_model AS embedding_model
ORDER BY kind, name
