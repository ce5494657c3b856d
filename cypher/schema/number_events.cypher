// Schema version 1 to 2, a batch at a time: number the collection's next $limit
// unnumbered events appended at $after or later, in the order version 1 read
// them back (appended_at, batch, position), after the last number the
// collection's log handed out, and move it past them (the SET takes the log's
// write lock and reads the number under it, as memory/append_events does).
// The event_order index gives the events by appended_at from $after on: a
// batch reads little more than itself, however long the log. $after is the
// text of the last batch's appended_at, read back as written: a value sent by
// the driver names its time zone otherwise ('UTC', not 'Z') and compares
// after the same instant written by the server.
MATCH (e:Event {collection: $collection})
WHERE e.appended_at >= datetime($after) AND e.seq IS NULL
WITH e
ORDER BY e.collection, e.appended_at, e.batch, e.position
LIMIT $limit
WITH collect(e) AS events
MERGE (log:EventLog {collection: $collection})
SET log.next = coalesce(log.next, 0) + size(events)
WITH events, log.next - size(events) AS first
UNWIND range(0, size(events) - 1) AS i
WITH events[i] AS e, first + i AS seq
SET e.seq = seq
RETURN count(e) AS numbered, toString(max(e.appended_at)) AS last
