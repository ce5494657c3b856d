// Dense recall of long memories by their passages, through the vector index: the
// $candidates nearest passages of any collection, of which those of
// $collection and $model are kept; each memory (that passes the filters, with
// a vector of $model) scores the exact cosine of its best kept passage. The top
// $k memories, best first (ties by id). `seen` tells whether the index ran out
// of candidates. The store merges these with the memories' own scores.
CALL db.index.vector.queryNodes($index, $candidates, $vector)
YIELD node, score
WITH count(*) AS seen,
     collect(CASE
       WHEN node.collection = $collection AND node.model = $model THEN node
     END) AS kept
CALL (kept) {
  UNWIND kept AS p
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
  ORDER BY similarity DESC, m.id
  LIMIT $k
  RETURN collect({id: m.id, similarity: similarity}) AS hits
}
RETURN seen, hits
