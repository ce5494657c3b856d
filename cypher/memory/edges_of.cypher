// Edges leaving the memory, and ASSOCIATED edges reaching it (the memory is then
// their source); by type, then target.
MATCH (m:Memory {collection: $collection, id: $id})
CALL (m) {
  MATCH (m)-[r]->(x)
  RETURN r, x
  UNION ALL
  MATCH (m)<-[r:ASSOCIATED]-(x)
  RETURN r, x
}
RETURN type(r) AS type,
       CASE WHEN x:Memory THEN x.id ELSE x.name END AS target,
       r.weight AS weight,
       r.co_occurrences AS co_occurrences,
       r.last_co_occurred AS last_co_occurred,
       r.created_at AS created_at,
       r.kind AS kind
ORDER BY type, target
