// A page of the collection's memories that have no due dates yet (written
// before schema version 5), after $after by id: setup computes their dates
// (engine.schedule.due_keys) and stores them with schema/date_memories.
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after AND m.fsrs_due IS NULL
RETURN m.id AS id, m.doc AS doc
ORDER BY m.id
LIMIT $limit
