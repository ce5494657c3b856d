// Drop up to $limit events of the collection that its retention no longer
// keeps: those beyond the newest $keep (numbered below the EventLog's next
// number less $keep) and those appended before $before (appended_at, the
// server's clock, seeks event_order); a null bound is left off. Each type dropped is added to the collection's CompactedEvents
// count of that type in the same transaction, so the totals the store reports
// (the events ever appended, memory/read_counts) never change.
// Returns how many went: fewer than $limit means none are left to drop.
OPTIONAL MATCH (log:EventLog {collection: $collection})
WITH coalesce(log.next, 0) - $keep AS below
CALL (below) {
  MATCH (e:Event {collection: $collection})
  WHERE e.seq < below
  RETURN e
  UNION
  MATCH (e:Event {collection: $collection})
  WHERE e.appended_at < $before
  RETURN e
}
WITH e
LIMIT $limit
WITH e.type AS type, collect(e) AS gone
FOREACH (e IN gone | DETACH DELETE e)
MERGE (c:CompactedEvents {collection: $collection, type: type})
SET c.n = coalesce(c.n, 0) + size(gone)
RETURN sum(size(gone)) AS dropped
