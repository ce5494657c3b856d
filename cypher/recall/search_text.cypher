// Lexical recall through the full-text index (Lucene BM25 over content), among
// the memories of $collection that pass the filters; best first (ties by id).
// The procedure's order is not promised, so the statement orders itself.
CALL db.index.fulltext.queryNodes($index, $query)
YIELD node, score
WITH node, score
WHERE node.collection = $collection
  AND node.tier IN $tiers
  AND (size($categories) = 0 OR node.category IN $categories)
  AND (size($domains) = 0 OR any(d IN coalesce(node.domains, []) WHERE d IN $domains))
  AND (size($tags) = 0 OR any(t IN coalesce(node.tags, []) WHERE t IN $tags))
  AND ($exclude_conversation_id IS NULL
       OR NOT $exclude_conversation_id IN coalesce(node.conversation_ids, []))
  AND ($occurred_after IS NULL OR node.occurred_at >= $occurred_after)
  AND ($occurred_before IS NULL OR node.occurred_at < $occurred_before)
  AND (size($speakers) = 0 OR node.speaker IN $speakers)
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k
