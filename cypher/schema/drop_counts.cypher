// Delete up to $limit counter nodes of a collection (counts and document
// frequencies), before setup() counts it afresh; run again until it deletes
// fewer than $limit. (The tests on the keys' other properties let the planner
// seek count_key and term_count_key by collection.)
CALL () {
  MATCH (c:Count {collection: $collection})
  WHERE c.key IS NOT NULL AND c.shard IS NOT NULL
  RETURN c
  UNION ALL
  MATCH (c:TermCount {collection: $collection})
  WHERE c.term IS NOT NULL AND c.shard IS NOT NULL
  RETURN c
}
WITH c
LIMIT $limit
DELETE c
RETURN count(*) AS deleted
