// Dense recall for several queries in one statement: for each of $queries
// ({row, vector}), what recall/search_vectors answers for that vector alone (the
// $candidates nearest memories of any collection, of which those of $collection,
// made by $model and passing the filters are kept, scored again by exact cosine,
// best first, ties by id; `seen` tells whether the index ran out of candidates),
// one row per query, in order.
UNWIND $queries AS query
CALL (query) {
  CALL db.index.vector.queryNodes($index, $candidates, query.vector)
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
  CALL (kept, query) {
    UNWIND kept AS m
    WITH m, 2.0 * vector.similarity.cosine(m.embedding, query.vector) - 1.0 AS similarity
    ORDER BY similarity DESC, m.id
    LIMIT $k
    RETURN collect({id: m.id, similarity: similarity}) AS hits
  }
  RETURN seen, hits
}
RETURN query.row AS row, seen, hits
ORDER BY row
