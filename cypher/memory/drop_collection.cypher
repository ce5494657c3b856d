// Delete up to $limit nodes of a collection with their edges, memories first and
// its counters last; run again until it deletes fewer than $limit. (Each test on
// the second key property lets the planner seek that label's composite index by
// collection.)
CALL () {
  MATCH (n:Memory {collection: $collection})
  WHERE n.id IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:Domain {collection: $collection})
  WHERE n.name IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:Trigger {collection: $collection})
  WHERE n.name IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:Concept {collection: $collection})
  WHERE n.name IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:Event {collection: $collection})
  WHERE n.appended_at IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:DecayPass {collection: $collection})
  WHERE n.period IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:State {collection: $collection})
  WHERE n.key IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:EventLog {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:CompactedEvents {collection: $collection})
  WHERE n.type IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:TurnOrder {collection: $collection})
  WHERE n.turn_of IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:Count {collection: $collection})
  WHERE n.key IS NOT NULL AND n.shard IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:TermCount {collection: $collection})
  WHERE n.term IS NOT NULL AND n.shard IS NOT NULL
  RETURN n
}
WITH n
LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
