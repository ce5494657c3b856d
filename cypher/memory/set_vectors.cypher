// Store vectors of existing memories; ids that name no memory are skipped. The
// document comes with them (its embedding_generated_at stamped by the store,
// which read it under learn/lock_memories).
UNWIND $items AS item
MATCH (m:Memory {collection: $collection, id: item.id})
SET m.embedding = item.embedding,
    m.embedding_model = item.embedding_model,
    m.doc = coalesce(item.doc, m.doc)
