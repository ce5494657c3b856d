// Delete up to $limit passages of a collection; run again until it deletes fewer
// than $limit. (The tests on the key's other properties let the planner seek
// passage_key by collection.)
MATCH (p:Passage {collection: $collection})
WHERE p.memory_id IS NOT NULL AND p.n IS NOT NULL
WITH p
LIMIT $limit
DETACH DELETE p
RETURN count(*) AS deleted
