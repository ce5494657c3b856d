// A page of the collection's memories that have no due dates yet (written
// before schema version 5), after $after by id: setup computes their dates
// (engine.schedule.due_keys) and stores them with schema/date_memories.
// ORDER BY names both properties of memory_key, whose order the planner then
// uses: a page reads the index from $after on, not the whole collection.
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after AND m.fsrs_due IS NULL
RETURN m.id AS id, m.doc AS doc
ORDER BY m.collection, m.id
LIMIT $limit
