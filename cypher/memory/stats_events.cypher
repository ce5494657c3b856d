// The length of the collection's event log.
// (The appended_at test lets the planner seek event_order by collection.)
MATCH (e:Event {collection: $collection})
WHERE e.appended_at IS NOT NULL
RETURN count(e) AS n
