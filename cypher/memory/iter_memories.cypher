// A page of the collection's memories, oldest first (ties by id), after the
// memory ($after_at, $after_id); from the start when $after_at is null.
MATCH (m:Memory {collection: $collection})
WHERE $after_at IS NULL
   OR m.created_at > $after_at
   OR (m.created_at = $after_at AND m.id > $after_id)
RETURN m.id AS id, m.created_at AS created_at, m.doc AS doc, m.embedding_model AS embedding_model
ORDER BY created_at, id
LIMIT $limit
