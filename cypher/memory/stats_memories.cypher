// Memory counts by category, tier and whether a vector is stored.
MATCH (m:Memory {collection: $collection})
RETURN m.category AS category, m.tier AS tier, m.embedding IS NULL AS pending, count(*) AS n
