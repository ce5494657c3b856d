// Take the write locks of the state documents a learning update reads, after its
// memories' (learn/lock_memories) and before reading them. A document not there
// yet is made here, without a value: MERGE on the state_key constraint makes two
// makers of one key wait for each other, so the second reads what the first
// wrote. One the update leaves without a value is deleted before commit
// (learn/drop_unwritten_states): nobody else ever sees it. $keys come sorted.
UNWIND $keys AS key
MERGE (s:State {collection: $collection, key: key})
SET s.learning_updates = coalesce(s.learning_updates, 0) + 1
