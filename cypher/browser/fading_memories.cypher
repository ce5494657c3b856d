// Valuable memories that are fading: the spaced-repetition score
// days_since_last_use / (usage_count + 1) is 0.7 or more, ranked by value
// (confidence x importance). These are the ones to bring back before they are lost.
MATCH (m:Memory {collection: $collection})
WHERE m.tier = 'active'
WITH m, duration.inDays(coalesce(m.last_used, m.created_at), datetime()).days AS idle
WITH m, idle, toFloat(idle) / (coalesce(m.usage_count, 0) + 1) AS decay_score
WHERE decay_score >= 0.7
RETURN m.id AS id,
       m.content AS content,
       idle AS days_unused,
       round(decay_score, 2) AS decay_score,
       round(m.confidence * m.importance, 3) AS value
ORDER BY value DESC, decay_score DESC
LIMIT 25
