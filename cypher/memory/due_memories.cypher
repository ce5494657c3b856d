// Active memories of the collection due for resurfacing at $now (microseconds
// since the epoch) by the due dates every write stores on them
// (engine.schedule.due_keys) under $schedule: the $limit most valuable
// (confidence × importance), then the most overdue (1 + (now - due) / span),
// then by id. Each branch seeks its schedule's index by collection and due
// date; only the branch of $schedule yields rows.
CALL () {
  MATCH (m:Memory {collection: $collection})
  WHERE m.seed_due <= $now AND $schedule = 'seed'
  RETURN m, m.seed_due AS due, m.seed_span AS span
  UNION ALL
  MATCH (m:Memory {collection: $collection})
  WHERE m.fsrs_due <= $now AND $schedule = 'fsrs'
  RETURN m, m.fsrs_due AS due, m.fsrs_span AS span
}
WITH m, due, span
WHERE m.tier = 'active'
WITH m, m.confidence * m.importance AS value, 1.0 + toFloat($now - due) / span AS urgency
ORDER BY value DESC, urgency DESC, m.id
LIMIT $limit
RETURN m.doc AS doc, m.embedding_model AS embedding_model
