// Delete the state documents among $keys that a learning update locked but left
// without a value (see learn/lock_states), in the same transaction.
UNWIND $keys AS key
MATCH (s:State {collection: $collection, key: key})
WHERE s.value IS NULL
DELETE s
