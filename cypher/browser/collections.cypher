// The collections in this database and their size: pick one for $collection.
// Counted in memory_key, the index of every memory by (collection, id): a count
// of every collection reads an entry per memory, but no node.
MATCH (m:Memory)
WHERE m.collection IS NOT NULL AND m.id IS NOT NULL
RETURN m.collection AS collection, count(*) AS memories
ORDER BY memories DESC, collection
