// Delete up to $limit counter nodes of a collection, before setup() counts it
// afresh; run again until it deletes fewer than $limit. (The key and shard tests
// let the planner seek count_key by collection.)
MATCH (c:Count {collection: $collection})
WHERE c.key IS NOT NULL AND c.shard IS NOT NULL
WITH c
LIMIT $limit
DELETE c
RETURN count(*) AS deleted
