// The stored passage vectors of the memories among $ids that have any, each
// memory's in order.
UNWIND $ids AS id
MATCH (p:Passage {collection: $collection, memory_id: id})
WHERE p.n IS NOT NULL
WITH id, p
ORDER BY id, p.n
RETURN id, collect(p.embedding) AS passages
