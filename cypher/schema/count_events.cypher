// The length of the collection's event log, by event type: with the events the
// retention dropped (CompactedEvents), the events ever appended, which setup()
// builds a collection's counters from, once (see schema/count_memories).
// (The appended_at test lets the planner seek event_order by collection.)
MATCH (e:Event {collection: $collection})
WHERE e.appended_at IS NOT NULL
RETURN e.type AS type, count(e) AS n
