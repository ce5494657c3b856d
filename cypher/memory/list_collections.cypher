// Collections holding at least one memory, read from memory_key, the index of
// every memory by (collection, id): an entry per memory but no node, in the
// index's order, so each collection comes once as the scan goes.
MATCH (m:Memory)
WHERE m.collection IS NOT NULL AND m.id IS NOT NULL
RETURN DISTINCT m.collection AS collection
ORDER BY collection
