// Take the write locks of the memories a learning update reads, before it reads
// them (GraphStore.learn). A write locks a node until commit, so two updates of
// one memory, from any process, run one after the other and the second reads
// what the first wrote. $ids come sorted: two updates never hold each other's
// locks. learning_updates counts the updates a memory has had.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
SET m.learning_updates = coalesce(m.learning_updates, 0) + 1
