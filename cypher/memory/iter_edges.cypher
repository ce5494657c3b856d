// A page of the collection's memories, by id after $after, each with the edges it
// stores (ASSOCIATED once, from its smaller id).
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after
WITH m
ORDER BY m.id
LIMIT $limit
OPTIONAL MATCH (m)-[r]->(x)
WITH m, r, x
ORDER BY m.id, type(r), CASE WHEN x:Memory THEN x.id ELSE x.name END
RETURN m.id AS source,
       collect(CASE WHEN r IS NOT NULL THEN {
         type: type(r),
         target: CASE WHEN x:Memory THEN x.id ELSE x.name END,
         weight: r.weight,
         co_occurrences: r.co_occurrences,
         last_co_occurred: r.last_co_occurred,
         created_at: r.created_at,
         kind: r.kind
       } END) AS edges
ORDER BY source
