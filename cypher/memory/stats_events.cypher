// The length of the collection's event log, by event type.
MATCH (e:Event {collection: $collection})
RETURN e.type AS type, count(e) AS n
