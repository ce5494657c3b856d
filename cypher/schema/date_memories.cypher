// Store the due dates setup computed for memories of the collection
// (schema/list_undated_memories).
UNWIND $items AS item
MATCH (m:Memory {collection: $collection, id: item.id})
SET m.seed_due = item.seed_due,
    m.seed_span = item.seed_span,
    m.fsrs_due = item.fsrs_due,
    m.fsrs_span = item.fsrs_span
