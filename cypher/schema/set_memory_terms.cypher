// Store the tagged terms of memories written before schema version 6 (see
// schema/memory_terms); each row of $items is {id, terms}.
UNWIND $items AS item
MATCH (m:Memory {collection: $collection, id: item.id})
SET m.terms = item.terms
