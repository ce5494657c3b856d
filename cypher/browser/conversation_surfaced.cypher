// What a conversation surfaced: the memories its events (retrievals, surfacings,
// engagement) named, and those remembered during it, in time order.
CALL () {
  MATCH (e:Event {collection: $collection, conversation_id: $conversation_id})
  UNWIND e.memory_ids AS memory_id
  MATCH (m:Memory {collection: $collection, id: memory_id})
  RETURN e.type AS event, e.at AS at, m
  UNION ALL
  MATCH (m:Memory {collection: $collection})
  WHERE $conversation_id IN m.conversation_ids
  RETURN 'remembered' AS event, m.created_at AS at, m
}
RETURN at, event, m.id AS id, m.content AS content, m.confidence AS confidence
ORDER BY at, event, id
