// Dense recall of long memories by exhaustive cosine over the collection's
// passages, when the vector index cannot answer (a query of another dimension,
// or too few of its nearest candidates belong here and pass the filters). Each
// memory scores its best passage; the top $k, best first (ties by id).
MATCH (p:Passage {collection: $collection})
WHERE p.memory_id IS NOT NULL
  AND p.n IS NOT NULL
  AND p.model = $model
  AND size(p.embedding) = size($vector)
MATCH (p)-[:PART_OF]->(m:Memory)
WHERE m.embedding_model = $model
  AND m.tier IN $tiers
  AND (size($categories) = 0 OR m.category IN $categories)
  AND (size($domains) = 0 OR any(d IN coalesce(m.domains, []) WHERE d IN $domains))
  AND (size($tags) = 0 OR any(t IN coalesce(m.tags, []) WHERE t IN $tags))
  AND ($exclude_conversation_id IS NULL
       OR NOT $exclude_conversation_id IN coalesce(m.conversation_ids, []))
  AND ($occurred_after IS NULL OR m.occurred_at >= $occurred_after)
  AND ($occurred_before IS NULL OR m.occurred_at < $occurred_before)
  AND (size($speakers) = 0 OR toLower(m.speaker) IN $speakers)
WITH m, max(2.0 * vector.similarity.cosine(p.embedding, $vector) - 1.0) AS similarity
RETURN m.id AS id, similarity
ORDER BY similarity DESC, id
LIMIT $k
