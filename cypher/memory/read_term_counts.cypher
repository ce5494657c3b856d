// How many of the collection's memories hold each of $terms (memory/add_term_counts),
// summed over the shards; a term no memory holds has no row.
UNWIND $terms AS term
MATCH (t:TermCount {collection: $collection, term: term})
WHERE t.shard IS NOT NULL
RETURN term, sum(t.n) AS n
