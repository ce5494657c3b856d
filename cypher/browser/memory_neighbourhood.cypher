// A memory and everything within two edges of it: its domains, triggers and
// concepts, the memories that share them, and its associations.
MATCH (m:Memory {collection: $collection, id: $memory_id})
OPTIONAL MATCH path = (m)-[*1..2]-(other)
WHERE other.collection = $collection
RETURN m, path
LIMIT 300
