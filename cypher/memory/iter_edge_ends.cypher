// A page of the collection's memories, by id after $after, each with the type,
// target and weight of every edge it stores (ASSOCIATED once, from its smaller
// id): what whole-graph figures read (graph health), without the rest of each
// edge.
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after
WITH m
ORDER BY m.id
LIMIT $limit
OPTIONAL MATCH (m)-[r]->(x)
WITH m, r, CASE WHEN x:Memory THEN x.id ELSE x.name END AS target
ORDER BY m.id, type(r), target
RETURN m.id AS source,
       collect(CASE WHEN r IS NOT NULL THEN [type(r), target, r.weight] END) AS edges
ORDER BY source
