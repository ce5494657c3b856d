// Strengthen existing edges, set-based and in the order of $updates: updates
// whose evidence may not create an edge (EdgeUpdate.create false). An edge that
// exists gains delta up to cap (a weight above the cap is kept);
// co_occurrences + 1, last_co_occurred = used_at = at. Nothing is created: an
// update whose edge (or hub, or memory) does not exist is skipped. ASSOCIATED
// comes oriented from its smaller id. Rows come in lock order (by type,
// target, source): writers of the same edges queue rather than deadlock.
UNWIND $updates AS u
MATCH (m:Memory {collection: $collection, id: u.source})
CALL (m, u) {
  WITH m, u
  WHERE u.type = 'IN_DOMAIN'
  MATCH (m)-[r:IN_DOMAIN]->(:Domain {collection: $collection, name: u.target})
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'HAS_TRIGGER'
  MATCH (m)-[r:HAS_TRIGGER]->(:Trigger {collection: $collection, name: u.target})
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'ABOUT'
  MATCH (m)-[r:ABOUT]->(:Concept {collection: $collection, name: u.target})
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'ASSOCIATED'
  MATCH (m)-[r:ASSOCIATED]->(:Memory {collection: $collection, id: u.target})
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'CONFLICTS_WITH'
  MATCH (m)-[r:CONFLICTS_WITH]->(:Memory {collection: $collection, id: u.target})
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'SUPERSEDES'
  MATCH (m)-[r:SUPERSEDES]->(:Memory {collection: $collection, id: u.target})
  RETURN r
  UNION ALL
  WITH m, u
  WHERE u.type = 'SYNTHESIZED_FROM'
  MATCH (m)-[r:SYNTHESIZED_FROM]->(:Memory {collection: $collection, id: u.target})
  RETURN r
}
SET r.weight = CASE
      WHEN r.weight + u.delta < u.cap THEN r.weight + u.delta
      WHEN r.weight > u.cap THEN r.weight
      ELSE u.cap
    END,
    r.co_occurrences = coalesce(r.co_occurrences, 0) + 1,
    r.last_co_occurred = u.at,
    r.used_at = u.at,
    r.kind = coalesce(r.kind, u.kind)
// A hub edge also carries its place in its hub's order of strength (see
// schema/domain_edge_rank): the hub's key, the weight negated, the memory's id.
SET r.hub = CASE WHEN u.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN $collection + '\u001f' + u.target END,
    r.rank = CASE WHEN u.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN -r.weight END,
    r.mid = CASE WHEN u.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN u.source END
