// Schema version 1 to 2, a page at a time: the collection's memories after
// $after by id, at most $limit. Those without occurred_at (all of them in a
// version 1 database) get their creation as occurred_at and their first
// conversation id as turn_of; each comes back with its document, so that
// memory/link_turns links it into its conversation in the same transaction.
// ORDER BY names both properties of memory_key, whose order the planner then
// uses: a page reads the index from $after on, not the whole collection.
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after
WITH m
ORDER BY m.collection, m.id
LIMIT $limit
WITH m, m.occurred_at IS NULL AS old
FOREACH (_ IN CASE WHEN old THEN [1] ELSE [] END |
  SET m.occurred_at = m.created_at, m.turn_of = m.conversation_ids[0]
)
RETURN m.id AS id, CASE WHEN old THEN m.doc END AS doc
