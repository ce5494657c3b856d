// State documents of the collection by key; keys with none give no row.
UNWIND $keys AS key
MATCH (s:State {collection: $collection, key: key})
RETURN s.key AS key, s.value AS value
