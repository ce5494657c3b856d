// The first collection after $after ('' for the first) that holds a memory; no
// row: none is left. Run once per collection (Neo4jStore.list_collections): a
// seek of the (collection, id) index in its order, stopped at the first entry,
// costs the same however many memories a collection holds, where reading every
// memory's collection would cost them all. (The id test lets the planner use
// the composite index: Neo4j does only when every property is tested.)
MATCH (m:Memory)
WHERE m.collection > $after AND m.id IS NOT NULL
RETURN m.collection AS collection
ORDER BY m.collection
LIMIT 1
