// Candidates for a duplicate check: up to $k memories of $collection sharing the
// most words with a text ($query: its tagged terms, any of them), in the
// full-text index's own order. Nothing else is read of them: the check compares
// the texts themselves, so the exact BM25 that recall/search_text prepares for
// (each hit's term counts) would be paid for nothing. One row.
CALL db.index.fulltext.queryNodes($index, $query, {limit: $k})
YIELD node
WITH node
WHERE node.collection = $collection AND node.id IS NOT NULL
RETURN collect(node.id) AS ids
