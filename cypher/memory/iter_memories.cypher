// A page of the collection's memories, oldest first (ties by id), after the
// memory ($after_at, $after_id); from the start with $after_at a moment before
// any memory and $after_id ''. The page key is a range on created_at (with a tie
// filter), so the planner seeks memory_created from the last page's end instead
// of reading the collection again for every page.
MATCH (m:Memory {collection: $collection})
WHERE m.created_at >= $after_at
  AND (m.created_at > $after_at OR m.id > $after_id)
RETURN m.id AS id, m.created_at AS created_at, m.doc AS doc, m.embedding_model AS embedding_model
ORDER BY created_at, id
LIMIT $limit
