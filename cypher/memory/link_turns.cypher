// Re-point the NEXT edges around conversation turns placed, moved or removed.
// Each of $places ({turn_of, occurred_at, id}) is where a turn now is or was (the
// nodes already show the change); turns are ordered by (occurred_at, id) within
// turn_of. The turn just before each place, and the turn at it if it is still
// there, get exactly one NEXT edge: to the turn right after them. A memory that is
// no longer a turn leads nowhere. The caller holds the conversations' locks
// (memory/lock_turns), so no other writer moves these neighbours meanwhile.
//
// Each neighbour is two seeks of memory_turn (collection, turn_of, occurred_at),
// never a read of the whole conversation: the turns at the same moment on the
// near side of the id, and the nearest moment strictly before (after), the
// first of an index range read in order. Of the two, the nearer one wins. (The
// seek hint keeps the planner off memory_key's range over ids, and off a scan of
// the whole memory_turn index it once chose for the same-moment side; ordering by the index's
// whole key, constant collection and turn_of first, lets it take the order from
// the index and stop at the first turn, instead of sorting every earlier one.)
UNWIND $places AS place
CALL (place) {
  CALL (place) {
    MATCH (p:Memory {collection: $collection, turn_of: place.turn_of, occurred_at: place.occurred_at})
    USING INDEX SEEK p:Memory(collection, turn_of, occurred_at)
    WHERE p.id < place.id
    RETURN p
    ORDER BY p.id DESC
    LIMIT 1
    UNION ALL
    MATCH (p:Memory {collection: $collection, turn_of: place.turn_of})
    USING INDEX SEEK p:Memory(collection, turn_of, occurred_at)
    WHERE p.occurred_at < place.occurred_at
    RETURN p
    ORDER BY p.collection DESC, p.turn_of DESC, p.occurred_at DESC, p.id DESC
    LIMIT 1
  }
  WITH p
  ORDER BY p.occurred_at DESC, p.id DESC
  LIMIT 1
  RETURN collect(p) AS before
}
OPTIONAL MATCH (here:Memory {collection: $collection, id: place.id})
CALL (here) {
  WITH here
  WHERE here IS NOT NULL AND here.turn_of IS NULL
  MATCH (here)-[gone:NEXT]->()
  DELETE gone
}
WITH before + CASE
       WHEN here.turn_of = place.turn_of AND here.occurred_at = place.occurred_at THEN [here]
       ELSE []
     END AS turns
UNWIND turns AS turn
WITH DISTINCT turn
CALL (turn) {
  MATCH (turn)-[old:NEXT]->()
  DELETE old
}
CALL (turn) {
  CALL (turn) {
    MATCH (s:Memory {collection: $collection, turn_of: turn.turn_of, occurred_at: turn.occurred_at})
    USING INDEX SEEK s:Memory(collection, turn_of, occurred_at)
    WHERE s.id > turn.id
    RETURN s
    ORDER BY s.id
    LIMIT 1
    UNION ALL
    MATCH (s:Memory {collection: $collection, turn_of: turn.turn_of})
    USING INDEX SEEK s:Memory(collection, turn_of, occurred_at)
    WHERE s.occurred_at > turn.occurred_at
    RETURN s
    ORDER BY s.collection, s.turn_of, s.occurred_at, s.id
    LIMIT 1
  }
  WITH turn, s
  ORDER BY s.occurred_at, s.id
  LIMIT 1
  CREATE (turn)-[:NEXT {
    weight: $weight,
    co_occurrences: 0,
    kind: $kind,
    created_at: $at,
    used_at: $at
  }]->(s)
}
