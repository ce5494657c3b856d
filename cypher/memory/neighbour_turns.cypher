// For each of $ids that is a conversation turn: the ids of up to $before turns
// just before it and $after just after it in its conversation (turn_of), ordered
// by (occurred_at, id), each list in the order they happened.
UNWIND $ids AS wanted
MATCH (m:Memory {collection: $collection, id: wanted})
WHERE m.turn_of IS NOT NULL
CALL (m) {
  OPTIONAL MATCH (p:Memory {collection: $collection, turn_of: m.turn_of})
  WHERE p.occurred_at < m.occurred_at OR (p.occurred_at = m.occurred_at AND p.id < m.id)
  WITH p
  ORDER BY p.occurred_at DESC, p.id DESC
  LIMIT $before
  RETURN reverse(collect(p.id)) AS earlier
}
CALL (m) {
  OPTIONAL MATCH (s:Memory {collection: $collection, turn_of: m.turn_of})
  WHERE s.occurred_at > m.occurred_at OR (s.occurred_at = m.occurred_at AND s.id > m.id)
  WITH s
  ORDER BY s.occurred_at, s.id
  LIMIT $after
  RETURN collect(s.id) AS later
}
RETURN m.id AS id, earlier, later
