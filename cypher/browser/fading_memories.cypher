// Valuable memories that are fading: the spaced-repetition score
// days_since_last_use / (usage_count + 1) is 0.7 or more, ranked by value
// (confidence x importance). These are the ones to bring back before they are lost.
// Every memory stores when its score reaches 0.7 (seed_due, microseconds since
// the epoch, indexed by collection): only the memories past it are read.
WITH datetime() AS now
MATCH (m:Memory {collection: $collection})
WHERE m.seed_due <= now.epochMillis * 1000 AND m.tier = 'active'
WITH m, duration.inSeconds(coalesce(m.last_used, m.created_at), now).seconds / 86400.0 AS idle
WITH m, idle, idle / (coalesce(m.usage_count, 0) + 1) AS decay_score
WHERE decay_score >= 0.7
RETURN m.id AS id,
       m.content AS content,
       toInteger(idle) AS days_unused,
       round(decay_score, 2) AS decay_score,
       round(m.confidence * m.importance, 3) AS value
ORDER BY value DESC, decay_score DESC, id
LIMIT 25
