// The length of the collection's event log.
MATCH (e:Event {collection: $collection})
RETURN count(e) AS n
