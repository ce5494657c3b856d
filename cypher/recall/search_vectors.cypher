// Dense recall through the vector index: the $candidates nearest memories of any
// collection, of which those of $collection, made by $model and passing the
// filters are kept, best first. `seen` tells whether the index ran out of
// candidates. The index scores cosine as (1 + cos) / 2; similarity is the cosine.
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
        AND (size($speakers) = 0 OR node.speaker IN $speakers)
       THEN {id: node.id, similarity: 2.0 * score - 1.0}
     END) AS kept
RETURN seen, kept[0..$k] AS hits
