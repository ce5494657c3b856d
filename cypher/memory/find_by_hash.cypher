// Ids of the memories whose normalized content hashes to $content_hash, oldest first.
MATCH (m:Memory {collection: $collection, content_hash: $content_hash})
RETURN m.id AS id
ORDER BY m.created_at, m.id
