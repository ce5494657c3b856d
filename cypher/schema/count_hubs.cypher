// Hub counts by kind, for setup() to build a collection's counters from, once
// (see schema/count_memories).
// (The name tests let the planner seek each hub key by collection.)
CALL () {
  MATCH (h:Domain {collection: $collection})
  WHERE h.name IS NOT NULL
  RETURN 'Domain' AS kind, count(h) AS n
  UNION ALL
  MATCH (h:Trigger {collection: $collection})
  WHERE h.name IS NOT NULL
  RETURN 'Trigger' AS kind, count(h) AS n
  UNION ALL
  MATCH (h:Concept {collection: $collection})
  WHERE h.name IS NOT NULL
  RETURN 'Concept' AS kind, count(h) AS n
}
RETURN kind, n
