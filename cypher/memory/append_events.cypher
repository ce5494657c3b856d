// Append events to the collection's log, numbered in the order given after the
// last number handed out. The collection's EventLog node holds that number; the
// SET takes its write lock, held until commit, so appenders to one collection
// number their events one after another and the numbers follow commit order: a
// reader that sees an event sees every event numbered before it. (The increment
// reads the property under the lock it takes: no update is lost.)
MERGE (log:EventLog {collection: $collection})
SET log.next = coalesce(log.next, 0) + size($events)
WITH datetime() AS now, log.next - size($events) AS first
UNWIND range(0, size($events) - 1) AS i
WITH now, first + i AS seq, $events[i] AS e
CREATE (:Event {
  collection: $collection,
  seq: seq,
  type: e.type,
  at: e.at,
  memory_ids: e.memory_ids,
  payload: e.payload,
  conversation_id: e.conversation_id,
  appended_at: now
})
