// Lexical recall: the candidates for BM25 as the embedded store computes it, over
// the memories of $collection that pass the filters. The store scores them
// (engine.retrieve.lexical.bm25_score) with the collection's own statistics,
// which it keeps beside the graph (engine/store/neo4j/counts.py): its number of
// memories, their mean length in terms and each term's document frequency.
//
// Why not Lucene's own score: Lucene computes idf and the mean length over the
// whole index, every collection at once, so a collection's ranking would move
// with what other collections hold, and differ from the embedded store's on the
// same data. Each memory's terms (schema/memory_terms) are those the embedded
// store indexes, tagged with the collection: $query (the tagged query terms,
// any of them) matches only this collection's memories, and Lucene's order,
// which picks the candidates, already uses this collection's document
// frequencies (its number of documents and mean length are still the whole
// index's).
//
// The statistics come with the candidates, in the same round trip: `memories`
// (how many the collection holds) and `length` (the terms of all their content),
// summed from its counters (memory/add_counts), and `dfs`, how many of its
// memories hold each of $plain_terms (the query terms untagged, in order), summed
// from its document frequencies (memory/add_term_counts).
//
// At most $candidates hits are read (the limit goes into the procedure). `seen`
// says how many the index gave: fewer than $candidates means every memory of
// the collection that shares a term with the query is among them, and the
// store's ranking is exactly the embedded store's; with more, the best
// $candidates by Lucene's order are ranked. Each kept memory comes with its
// length in terms and how often it holds each of $terms (the tagged query
// terms, in the query's order).
CALL () {
  MATCH (c:Count {collection: $collection})
  WHERE c.key IS NOT NULL AND c.shard IS NOT NULL
    AND (c.key STARTS WITH '["memories",' OR c.key = '["terms"]')
  RETURN sum(CASE WHEN c.key = '["terms"]' THEN 0 ELSE c.n END) AS memories,
         sum(CASE WHEN c.key = '["terms"]' THEN c.n ELSE 0 END) AS length
}
CALL () {
  UNWIND range(0, size($plain_terms) - 1) AS i
  OPTIONAL MATCH (t:TermCount {collection: $collection, term: $plain_terms[i]})
  WHERE t.shard IS NOT NULL
  WITH i, sum(t.n) AS n
  ORDER BY i
  RETURN collect(n) AS dfs
}
CALL () {
  CALL db.index.fulltext.queryNodes($index, $query, {limit: $candidates})
  YIELD node
  WITH count(*) AS seen,
       collect(CASE
         WHEN node.collection = $collection
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
  RETURN seen, kept
}
RETURN memories, length, dfs, seen,
       [m IN kept | {
         id: m.id,
         length: size(m.terms),
         tfs: [term IN $terms | size([w IN m.terms WHERE w = term])]
       }] AS hits
