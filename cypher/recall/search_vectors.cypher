// Dense recall through the vector index: the $candidates nearest memories of any
// collection, of which those of $collection, made by $model and passing the
// filters are kept, best first. `seen` tells whether the index ran out of
// candidates; when it did not and fewer than $k were kept, the store asks again
// with four times as many candidates (up to a cap), then scans exactly. The
// index's own score may be approximate (quantized vectors) and its order loose,
// so the cosine of each kept memory is computed again, exactly, and the top $k
// are taken by it (ties by id), as recall/search_vectors_exact does: both paths
// give the same scores. Similarity is the cosine (the function
// answers (1 + cos) / 2). Each hit comes with its vector, read for the cosine
// anyway: the recall's crowding and variety then need not read it again.
CALL db.index.vector.queryNodes($index, $candidates, $vector)
YIELD node, score
WITH count(*) AS seen,
     collect(CASE
       WHEN node.collection = $collection
        AND node.embedding_model = $model
        AND node.tier IN $tiers
        AND (size($categories) = 0 OR node.category IN $categories)
        AND (size($domains) = 0 OR any(d IN coalesce(node.domains, []) WHERE d IN $domains))
        AND (size($tags) = 0 OR any(t IN coalesce(node.tags, []) WHERE t IN $tags))
        AND ($exclude_conversation_id IS NULL
             OR NOT $exclude_conversation_id IN coalesce(node.conversation_ids, []))
        AND ($occurred_after IS NULL OR node.occurred_at >= $occurred_after)
        AND ($occurred_before IS NULL OR node.occurred_at < $occurred_before)
        AND (size($speakers) = 0 OR toLower(node.speaker) IN $speakers)
       THEN node
     END) AS kept
CALL (kept) {
  UNWIND kept AS m
  WITH m, 2.0 * vector.similarity.cosine(m.embedding, $vector) - 1.0 AS similarity
  ORDER BY similarity DESC, m.id
  LIMIT $k
  RETURN collect({id: m.id, similarity: similarity, embedding: m.embedding}) AS hits
}
RETURN seen, hits
