// Store vectors of existing memories; ids that name no memory are skipped. The
// document comes with them (its embedding_generated_at stamped by the store,
// which read it under learn/lock_memories). Each vector is kept as a float32
// array (db.create.setNodeVectorProperty), as memory/add_memories explains.
UNWIND $items AS item
MATCH (m:Memory {collection: $collection, id: item.id})
SET m.embedding_model = item.embedding_model,
    m.doc = coalesce(item.doc, m.doc)
WITH m, item
CALL db.create.setNodeVectorProperty(m, 'embedding', item.embedding)
