// Delete the passages of the memories among $ids (their memory may be gone).
UNWIND $ids AS id
MATCH (p:Passage {collection: $collection, memory_id: id})
WHERE p.n IS NOT NULL
DETACH DELETE p
