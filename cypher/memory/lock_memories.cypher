// Take the write locks of memories before a write reads what it changes (their
// properties, their edges), so that the counters it updates from what it read
// (memory/add_counts) see every earlier write of those memories and no later
// one. A property set and removed at once: the write lock stays to commit.
// $ids come sorted: two writers never hold each other's locks.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
SET m.locking = true
REMOVE m.locking
