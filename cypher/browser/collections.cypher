// The collections in this database and their size: pick one for $collection.
MATCH (m:Memory)
RETURN m.collection AS collection, count(*) AS memories
ORDER BY memories DESC, collection
