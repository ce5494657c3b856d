// Memory counts by category, tier and whether a vector is stored.
// (The id test lets the planner seek memory_key by collection.)
MATCH (m:Memory {collection: $collection})
WHERE m.id IS NOT NULL
RETURN m.category AS category, m.tier AS tier, m.embedding IS NULL AS pending, count(*) AS n
