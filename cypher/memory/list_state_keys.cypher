// Keys of the collection's state documents that start with $prefix, sorted
// (the state_key constraint indexes (collection, key)).
MATCH (s:State {collection: $collection})
WHERE s.key STARTS WITH $prefix
RETURN s.key AS key
ORDER BY key
