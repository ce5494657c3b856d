// Which of $ids already name a memory of the collection.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
RETURN m.id AS id
