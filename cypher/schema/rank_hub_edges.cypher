// Version 6 to 7, a page of the collection's memories after $after by id: each
// hub edge of theirs gets its place in its hub's order of strength
// (schema/domain_edge_rank and its siblings), as every write now sets it. Run
// again, a page gets the same values. ORDER BY names both properties of
// memory_key, whose order the planner then uses: a page reads the index from
// $after on, not the whole collection.
MATCH (m:Memory {collection: $collection})
WHERE m.id > $after
WITH m
ORDER BY m.collection, m.id
LIMIT $limit
CALL (m) {
  MATCH (m)-[r:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(h)
  SET r.hub = $collection + '\u001f' + h.name,
      r.rank = -r.weight,
      r.mid = m.id
  RETURN count(r) AS ranked
}
RETURN count(m) AS memories, sum(ranked) AS edges, max(m.id) AS last
