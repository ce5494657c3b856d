// The collections that hold events, whether or not they hold memories (a schema
// migration numbers each one's log). Read from the event_order index, which
// holds the collection of every event: no Event node is read.
MATCH (e:Event)
WHERE e.collection IS NOT NULL AND e.appended_at IS NOT NULL
RETURN DISTINCT e.collection AS collection
ORDER BY collection
