// Write state documents, replacing those with the same keys. MERGE on the
// state_key constraint: two writers of one new key make one node.
UNWIND $items AS item
MERGE (s:State {collection: $collection, key: item.key})
SET s.value = item.value
