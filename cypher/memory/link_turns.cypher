// Re-point the NEXT edges around conversation turns placed, moved or removed.
// Each of $places ({turn_of, occurred_at, id}) is where a turn now is or was (the
// nodes already show the change); turns are ordered by (occurred_at, id) within
// turn_of. The turn just before each place, and the turn at it if it is still
// there, get exactly one NEXT edge: to the turn right after them. A memory that is
// no longer a turn leads nowhere.
UNWIND $places AS place
CALL (place) {
  MATCH (p:Memory {collection: $collection, turn_of: place.turn_of})
  WHERE p.occurred_at < place.occurred_at
     OR (p.occurred_at = place.occurred_at AND p.id < place.id)
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
  MATCH (s:Memory {collection: $collection, turn_of: turn.turn_of})
  WHERE s.occurred_at > turn.occurred_at
     OR (s.occurred_at = turn.occurred_at AND s.id > turn.id)
  WITH s
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
