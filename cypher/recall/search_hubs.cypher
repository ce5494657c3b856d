// Hubs whose name vector (by $model) has cosine similarity of at least
// $min_similarity with $vector, best first, ties by kind and name; with degree
// (counted per type with nothing asked of the far end: from the degree store).
// (The name tests let the planner seek each hub key by collection.)
CALL () {
  MATCH (h:Domain {collection: $collection})
  WHERE h.name IS NOT NULL AND h.embedding_model = $model
  RETURN 'Domain' AS kind, h
  UNION ALL
  MATCH (h:Trigger {collection: $collection})
  WHERE h.name IS NOT NULL AND h.embedding_model = $model
  RETURN 'Trigger' AS kind, h
  UNION ALL
  MATCH (h:Concept {collection: $collection})
  WHERE h.name IS NOT NULL AND h.embedding_model = $model
  RETURN 'Concept' AS kind, h
}
WITH kind, h
WHERE size(h.embedding) = size($vector) AND any(x IN h.embedding WHERE x <> 0.0)
WITH kind, h, 2.0 * vector.similarity.cosine(h.embedding, $vector) - 1.0 AS similarity
WHERE similarity >= $min_similarity
RETURN kind,
       h.name AS name,
       similarity,
       COUNT { (h)<-[:IN_DOMAIN]-() } + COUNT { (h)<-[:HAS_TRIGGER]-() } + COUNT { (h)<-[:ABOUT]-() } AS degree
ORDER BY similarity DESC, kind, name
LIMIT $k
