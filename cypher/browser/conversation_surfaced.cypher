// What a conversation surfaced: the memories its events (retrievals, surfacings,
// engagement) named, and those remembered during it, in time order. The
// collection's events and memories are sought through indexes (event_order,
// memory_created) and the conversation picked out among them.
CALL () {
  MATCH (e:Event {collection: $collection})
  WHERE e.appended_at IS NOT NULL AND e.conversation_id = $conversation_id
  UNWIND e.memory_ids AS memory_id
  MATCH (m:Memory {collection: $collection, id: memory_id})
  RETURN e.type AS event, e.at AS at, m
  UNION ALL
  MATCH (m:Memory {collection: $collection})
  WHERE m.created_at IS NOT NULL AND $conversation_id IN m.conversation_ids
  RETURN 'remembered' AS event, m.created_at AS at, m
}
RETURN at, event, m.id AS id, m.content AS content, m.confidence AS confidence
ORDER BY at, event, id
