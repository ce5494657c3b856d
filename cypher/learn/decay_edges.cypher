// One page of a decay pass: the edges leaving the next $limit memories of the
// collection by id after $after. Every edge last used before $unused_before and
// above $floor loses $step, never below $floor, and is marked with the pass's
// $period, so a pass cut short and run again never decays an edge twice. No
// row comes back when a pass for $period is already recorded
// (learn/record_decay_pass); else the count decayed and the page's last id
// (null: the collection is done). A page is one bounded transaction, however
// large the collection. Only edges of $types when it is not null; NEXT edges
// (the order of a conversation's turns) are structure, not learned: they never
// decay.
OPTIONAL MATCH (done:DecayPass {collection: $collection, period: $period})
WITH done
WHERE done IS NULL
CALL () {
  MATCH (m:Memory {collection: $collection})
  WHERE m.id > $after
  WITH m
  ORDER BY m.id
  LIMIT $limit
  RETURN collect(m) AS page
}
CALL (page) {
  UNWIND page AS m
  MATCH (m)-[r]->()
  WHERE r.used_at < $unused_before
    AND r.weight > $floor
    AND type(r) <> 'NEXT'
    AND ($types IS NULL OR type(r) IN $types)
    AND coalesce(r.decay_period, '') <> $period
  // That was read without a lock: a reinforcement, or a pass of the same
  // period, may commit before this one takes the edge's write lock. The first
  // SET takes it (held until commit); the edge is then read again under it and
  // decayed only if it still qualifies: used since, or marked, it is left as it is.
  SET r.decay_lock = true
  REMOVE r.decay_lock
  WITH r
  WHERE r.used_at < $unused_before
    AND r.weight > $floor
    AND coalesce(r.decay_period, '') <> $period
  SET r.weight = CASE WHEN r.weight - $step < $floor THEN $floor ELSE r.weight - $step END,
      r.decay_period = $period
  // A hub edge keeps its place in its hub's order (schema/domain_edge_rank).
  SET r.rank = CASE WHEN type(r) IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN -r.weight END
  RETURN count(r) AS decayed
}
RETURN decayed, last(page).id AS last
