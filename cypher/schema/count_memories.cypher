// Memory counts by category, tier and the model of the stored vector (null
// without one), with the count and sum of their quality scores (in the same
// pass): what setup() builds a collection's counters from, once, for a database
// written before the store kept them (memory/add_counts keeps them since).
// (The id test lets the planner seek memory_key by collection.)
MATCH (m:Memory {collection: $collection})
WHERE m.id IS NOT NULL
RETURN m.category AS category, m.tier AS tier,
       CASE WHEN m.embedding IS NULL THEN null ELSE m.embedding_model END AS model,
       count(*) AS n, count(m.quality_score) AS scored, sum(m.quality_score) AS quality_sum
