// Memory counts by category, tier and whether a vector is stored, with the
// count and sum of their quality scores (in the same pass).
// (The id test lets the planner seek memory_key by collection.)
MATCH (m:Memory {collection: $collection})
WHERE m.id IS NOT NULL
RETURN m.category AS category, m.tier AS tier, m.embedding IS NULL AS pending, count(*) AS n,
       count(m.quality_score) AS scored, sum(m.quality_score) AS quality_sum
