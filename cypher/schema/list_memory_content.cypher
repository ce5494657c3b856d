// Up to $limit memories of the collection after id $after, by id, with their
// content: for setup() to index and count their terms, page by page, once
// (schema version 6).
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after
RETURN m.id AS id, m.content AS content
ORDER BY m.id
LIMIT $limit
