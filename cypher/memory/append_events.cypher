// Append events to the collection's log. They are read back by (appended_at,
// batch, position): the server's clock, this call's $batch, the place in it.
WITH datetime() AS now
UNWIND range(0, size($events) - 1) AS i
WITH now, i, $events[i] AS e
CREATE (:Event {
  collection: $collection,
  type: e.type,
  at: e.at,
  memory_ids: e.memory_ids,
  payload: e.payload,
  conversation_id: e.conversation_id,
  appended_at: now,
  batch: $batch,
  position: i
})
