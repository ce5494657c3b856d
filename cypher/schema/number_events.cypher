// Schema version 1 to 2: number the events of each collection in the order
// version 1 read them back (appended_at, batch, position), and start each
// collection's counter after them.
MATCH (e:Event)
WHERE e.seq IS NULL
WITH e
ORDER BY e.collection, e.appended_at, e.batch, e.position
WITH e.collection AS collection, collect(e) AS events
MERGE (log:EventLog {collection: collection})
WITH log, events, coalesce(log.next, 0) AS first
SET log.next = first + size(events)
WITH events, first
UNWIND range(0, size(events) - 1) AS i
WITH events[i] AS e, first + i AS seq
SET e.seq = seq
