// Create or overwrite edges: weight, counters and kind as given. Hubs are created
// when absent; an edge whose memory (or, memory to memory, whose target memory)
// does not exist is skipped. created_at: as given, else the edge's own, else the
// last co-occurrence, else its memory's creation; used_at: the last
// co-occurrence, else created_at. ASSOCIATED comes oriented from its smaller id.
// Rows come in lock order (by type, target, source): writers of the same hubs
// take their locks in one order and queue rather than deadlock.
UNWIND $edges AS e
MATCH (m:Memory {collection: $collection, id: e.source})
CALL (m, e) {
  WITH m, e
  WHERE e.type = 'IN_DOMAIN'
  MERGE (h:Domain {collection: $collection, name: e.target})
  MERGE (m)-[r:IN_DOMAIN]->(h)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'HAS_TRIGGER'
  MERGE (h:Trigger {collection: $collection, name: e.target})
  MERGE (m)-[r:HAS_TRIGGER]->(h)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'ABOUT'
  MERGE (h:Concept {collection: $collection, name: e.target})
  MERGE (m)-[r:ABOUT]->(h)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'ASSOCIATED'
  MATCH (o:Memory {collection: $collection, id: e.target})
  MERGE (m)-[r:ASSOCIATED]->(o)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'CONFLICTS_WITH'
  MATCH (o:Memory {collection: $collection, id: e.target})
  MERGE (m)-[r:CONFLICTS_WITH]->(o)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'SUPERSEDES'
  MATCH (o:Memory {collection: $collection, id: e.target})
  MERGE (m)-[r:SUPERSEDES]->(o)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'SYNTHESIZED_FROM'
  MATCH (o:Memory {collection: $collection, id: e.target})
  MERGE (m)-[r:SYNTHESIZED_FROM]->(o)
  RETURN r
  UNION ALL
  WITH m, e
  WHERE e.type = 'NEXT'
  MATCH (o:Memory {collection: $collection, id: e.target})
  MERGE (m)-[r:NEXT]->(o)
  RETURN r
}
WITH e, r, coalesce(e.created_at, r.created_at, e.last_co_occurred, m.created_at) AS created
SET r.weight = e.weight,
    r.co_occurrences = e.co_occurrences,
    r.last_co_occurred = e.last_co_occurred,
    r.kind = e.kind,
    r.created_at = created,
    r.used_at = coalesce(e.last_co_occurred, created)
// A hub edge also carries its place in its hub's order of strength (see
// schema/domain_edge_rank): the hub's key, the weight negated, the memory's id.
SET r.hub = CASE WHEN e.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN $collection + '\u001f' + e.target END,
    r.rank = CASE WHEN e.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN -r.weight END,
    r.mid = CASE WHEN e.type IN ['IN_DOMAIN', 'HAS_TRIGGER', 'ABOUT'] THEN e.source END
