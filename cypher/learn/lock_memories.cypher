// Take the write locks of the memories a learning update reads, before it reads
// them (GraphStore.learn). A write locks a node until commit, so two updates of
// one memory, from any process, run one after the other and the second reads
// what the first wrote. Every other write that reads a memory's document and
// writes it back (an edit that keeps what was learned, a re-embedding) takes
// the same locks first, or it would write over an update committed between.
// $ids come sorted: two updates never hold each other's locks.
// learning_updates counts the updates a memory has had.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
SET m.learning_updates = coalesce(m.learning_updates, 0) + 1
