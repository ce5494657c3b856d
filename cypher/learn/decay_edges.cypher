// One decay pass over the collection's edges, unless a pass for $period already
// ran (then no row comes back): every edge last used before $unused_before and
// above $floor loses $step, never below $floor; only edges of $types when it is
// not null. The pass is recorded with it.
OPTIONAL MATCH (done:DecayPass {collection: $collection, period: $period})
WITH done
WHERE done IS NULL
CALL () {
  MATCH (:Memory {collection: $collection})-[r]->()
  WHERE r.used_at < $unused_before AND r.weight > $floor
    AND ($types IS NULL OR type(r) IN $types)
  SET r.weight = CASE WHEN r.weight - $step < $floor THEN $floor ELSE r.weight - $step END
  RETURN count(r) AS decayed
}
CREATE (:DecayPass {
  collection: $collection,
  period: $period,
  unused_before: $unused_before,
  decayed: decayed
})
RETURN decayed
