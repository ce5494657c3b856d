// Dense recall by exhaustive cosine over the collection: when the vector index
// cannot answer (a query of another dimension than the index; a filter whose
// categories and tiers leave too few memories for it to find, by the
// collection's counters; or its widest search, recall/search_vectors with
// 10,000 candidates, still too short of this collection's memories that pass
// the filters). Cosines are computed only for the memories that pass.
// (The id test lets the planner seek memory_key by collection.)
MATCH (m:Memory {collection: $collection})
WHERE m.id IS NOT NULL
  AND m.embedding_model = $model
  AND size(m.embedding) = size($vector)
  AND any(x IN m.embedding WHERE x <> 0.0)
  AND m.tier IN $tiers
  AND (size($categories) = 0 OR m.category IN $categories)
  AND (size($domains) = 0 OR any(d IN coalesce(m.domains, []) WHERE d IN $domains))
  AND (size($tags) = 0 OR any(t IN coalesce(m.tags, []) WHERE t IN $tags))
  AND ($exclude_conversation_id IS NULL
       OR NOT $exclude_conversation_id IN coalesce(m.conversation_ids, []))
  AND ($occurred_after IS NULL OR m.occurred_at >= $occurred_after)
  AND ($occurred_before IS NULL OR m.occurred_at < $occurred_before)
  AND (size($speakers) = 0 OR toLower(m.speaker) IN $speakers)
WITH m, 2.0 * vector.similarity.cosine(m.embedding, $vector) - 1.0 AS similarity
RETURN m.id AS id, similarity
ORDER BY similarity DESC, id
LIMIT $k
