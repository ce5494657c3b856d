// Events the retention dropped from the collection's log, by type
// (memory/compact_events counts them): part of the log's totals.
// (The type test lets the planner seek compacted_events_key by collection.)
MATCH (c:CompactedEvents {collection: $collection})
WHERE c.type IS NOT NULL
RETURN c.type AS type, c.n AS n
