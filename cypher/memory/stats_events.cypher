// The length of the collection's event log, by event type.
// (The appended_at test lets the planner seek event_order by collection.)
MATCH (e:Event {collection: $collection})
WHERE e.appended_at IS NOT NULL
RETURN e.type AS type, count(e) AS n
