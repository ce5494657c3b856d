// For each of $ids that is a conversation turn: the ids of up to $before turns
// just before it and $after just after it in its conversation (turn_of), ordered
// by (occurred_at, id), each list in the order they happened.
//
// Each side is two seeks of memory_turn (collection, turn_of, occurred_at), never
// a read of the whole conversation: the turns at the same moment on that side of
// the id, and the nearest earlier (later) moments, an index range read in order
// that stops after $before ($after) turns. The nearest of both are kept. (The
// seek hint keeps the planner off memory_key's range over ids, and off a scan of
// the whole memory_turn index it once chose for the same-moment side; ordering by the index's
// whole key, constant collection and turn_of first, lets it take the order from
// the index and stop early, instead of sorting every earlier turn.)
UNWIND $ids AS wanted
MATCH (m:Memory {collection: $collection, id: wanted})
WHERE m.turn_of IS NOT NULL
CALL (m) {
  CALL (m) {
    MATCH (p:Memory {collection: $collection, turn_of: m.turn_of, occurred_at: m.occurred_at})
    USING INDEX SEEK p:Memory(collection, turn_of, occurred_at)
    WHERE p.id < m.id
    RETURN p
    ORDER BY p.id DESC
    LIMIT $before
    UNION ALL
    MATCH (p:Memory {collection: $collection, turn_of: m.turn_of})
    USING INDEX SEEK p:Memory(collection, turn_of, occurred_at)
    WHERE p.occurred_at < m.occurred_at
    RETURN p
    ORDER BY p.collection DESC, p.turn_of DESC, p.occurred_at DESC, p.id DESC
    LIMIT $before
  }
  WITH p
  ORDER BY p.occurred_at DESC, p.id DESC
  LIMIT $before
  RETURN reverse(collect(p.id)) AS earlier
}
CALL (m) {
  CALL (m) {
    MATCH (s:Memory {collection: $collection, turn_of: m.turn_of, occurred_at: m.occurred_at})
    USING INDEX SEEK s:Memory(collection, turn_of, occurred_at)
    WHERE s.id > m.id
    RETURN s
    ORDER BY s.id
    LIMIT $after
    UNION ALL
    MATCH (s:Memory {collection: $collection, turn_of: m.turn_of})
    USING INDEX SEEK s:Memory(collection, turn_of, occurred_at)
    WHERE s.occurred_at > m.occurred_at
    RETURN s
    ORDER BY s.collection, s.turn_of, s.occurred_at, s.id
    LIMIT $after
  }
  WITH s
  ORDER BY s.occurred_at, s.id
  LIMIT $after
  RETURN collect(s.id) AS later
}
RETURN m.id AS id, earlier, later
