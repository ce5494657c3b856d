// Store vectors of existing memories; ids that name no memory are skipped.
UNWIND $items AS item
MATCH (m:Memory {collection: $collection, id: item.id})
SET m.embedding = item.embedding,
    m.embedding_model = item.embedding_model
