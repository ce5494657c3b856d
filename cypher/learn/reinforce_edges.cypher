// Reinforce edges, set-based and in the order of $updates (updates whose evidence
// may create an edge; learn/strengthen_edges takes the others): an existing edge gains
// delta up to cap (a weight above the cap is kept), a missing one starts at
// initial; co_occurrences + 1, last_co_occurred = used_at = at. Hubs are created
// when absent; updates whose memories do not exist are skipped. ASSOCIATED comes
// oriented from its smaller id. Every value is read inside SET, so an edge named
// twice is reinforced twice, in order. Rows come in lock order (by type,
// target, source): writers of the same hubs queue rather than deadlock.
UNWIND $updates AS u
MATCH (m:Memory {collection: $collection, id: u.source})
CALL (m, u) {
  WITH m, u
  WHERE u.type = 'IN_DOMAIN'
  MERGE (h:Domain {collection: $collection, name: u.target})
  MERGE (m)-[r:IN_DOMAIN]->(h)
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'HAS_TRIGGER'
  MERGE (h:Trigger {collection: $collection, name: u.target})
  MERGE (m)-[r:HAS_TRIGGER]->(h)
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'ABOUT'
  MERGE (h:Concept {collection: $collection, name: u.target})
  MERGE (m)-[r:ABOUT]->(h)
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'ASSOCIATED'
  MATCH (o:Memory {collection: $collection, id: u.target})
  MERGE (m)-[r:ASSOCIATED]->(o)
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'CONFLICTS_WITH'
  MATCH (o:Memory {collection: $collection, id: u.target})
  MERGE (m)-[r:CONFLICTS_WITH]->(o)
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'SUPERSEDES'
  MATCH (o:Memory {collection: $collection, id: u.target})
  MERGE (m)-[r:SUPERSEDES]->(o)
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'SYNTHESIZED_FROM'
  MATCH (o:Memory {collection: $collection, id: u.target})
  MERGE (m)-[r:SYNTHESIZED_FROM]->(o)
  RETURN r
}
SET r.weight = CASE
      WHEN r.weight IS NULL THEN u.initial
      WHEN r.weight + u.delta < u.cap THEN r.weight + u.delta
      WHEN r.weight > u.cap THEN r.weight
      ELSE u.cap
    END,
    r.co_occurrences = coalesce(r.co_occurrences, 0) + 1,
    r.last_co_occurred = u.at,
    r.used_at = u.at,
    r.created_at = coalesce(r.created_at, u.at),
    r.kind = coalesce(r.kind, u.kind)
// A hub edge also carries its place in its hub's order of strength (see
// schema/domain_edge_rank): the hub's key, the weight negated, the memory's id.
SET r.hub = CASE WHEN u.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN $collection + '\u001f' + u.target END,
    r.rank = CASE WHEN u.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN -r.weight END,
    r.mid = CASE WHEN u.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN u.source END
