// Associative expansion in one query. From each anchor, a walk of at most
// $max_depth (1-3) hops over IN_DOMAIN, HAS_TRIGGER, ABOUT (both ways) and
// ASSOCIATED edges keeps the best path to every node; a memory's strength is
// the sum over anchors of its best path from each. The rules are the embedded
// store's (CollectionGraph.expand), so both give the same answer:
//
// - A step from a node held with strength s over an edge of weight w reaches
//   its neighbour with s * $damping * w; leaving a hub, when $penalty is set,
//   also times 1 / degree if $degree_mode is 'inverse', else
//   1 / (1 + ln(1 + degree / $pivot)) (degree: the memories the hub links, at
//   least 1). A hub whose factor is below $min_factor is not left at all: every
//   path through it would be negligible, and reading its edges is the cost.
//   Nor is a hub of more than $max_hub_degree memories (when not null), with
//   or without the penalty: it says nothing about any one of them.
//   The degree is counted per relationship type with nothing asked of the far
//   end (only memories link hubs), which Neo4j answers from the node's degree
//   store without reading the edges.
// - A hub is left only through its $fanout strongest edges (ties: memory id).
//   The last hop leaves memories only through ASSOCIATED: only memories are
//   results.
// - Per anchor, hop by hop, a node takes a new path only when it beats the
//   node's best so far, and the first path found to reach that value wins. The
//   next hop starts from the $frontier strongest improved nodes (ties: the first
//   found), never from an anchor's node: a path through another anchor is that
//   anchor's support, not a second one.
// - "First found" is discovery order: the frontier in order, each node's edges
//   in block order (from a memory: ASSOCIATED neighbours by id, then Domain,
//   Trigger, Concept hubs by name; from a hub: by weight descending, then id).
// - An anchor's own node is never its result; memories that fail the filters
//   are walked through but not returned; at most $max_results memories, by
//   strength descending, then id.
//
// What it reads. The anchors walk together, hop by hop; the walk's state is
// one entry per (anchor, node) reached, `a` being the anchor's place in
// `starts`. Each hop groups its frontier by node and reads a node's edges once
// however many anchors it is on, so a hub's are read at most once a hop (twice
// a query, at hops 2 and 3; once when $max_depth is 2). A hub's $fanout
// strongest edges come from an index of its edges in order of strength
// (schema/domain_edge_rank and its siblings: the hub's key, the weight
// negated, the memory's id), read in order and stopped after $fanout: a visit
// reads $fanout edges, not every edge of the hub.
//
// Parameters: $collection; $anchors [{kind, name, strength}], merged by (kind,
// name) and sorted; $max_depth, $damping, $fanout, $frontier, $penalty,
// $degree_mode ('log' or 'inverse'), $pivot, $min_factor, $max_hub_degree,
// $max_results; $paths (false: no steps are built); filters $tiers,
// $categories, $domains, $tags, $exclude_conversation_id, $occurred_after,
// $occurred_before, $speakers.
// One row, `found`: the memories in that order, each with `reached`: per anchor
// (its index in $anchors), the strength and the steps of its best path, in
// anchor order.

UNWIND range(0, size($anchors) - 1) AS ai
WITH ai, $anchors[ai] AS anchor
CALL (anchor) {
  MATCH (n:Memory {collection: $collection, id: anchor.name})
  WHERE anchor.kind = 'Memory'
  RETURN n
  UNION ALL
  MATCH (n:Domain {collection: $collection, name: anchor.name})
  WHERE anchor.kind = 'Domain'
  RETURN n
  UNION ALL
  MATCH (n:Trigger {collection: $collection, name: anchor.name})
  WHERE anchor.kind = 'Trigger'
  RETURN n
  UNION ALL
  MATCH (n:Concept {collection: $collection, name: anchor.name})
  WHERE anchor.kind = 'Concept'
  RETURN n
}
WITH collect({ai: ai, n: n, v: anchor.strength}) AS starts
WITH [s IN starts | s.ai] AS ais,
     [s IN starts | s.n] AS barrier,
     [a IN range(0, size(starts) - 1) | {a: a, n: starts[a].n, v: starts[a].v, p: []}] AS best
WITH ais, barrier, best, best AS frontier

// -- hop 1 --------------------------------------------------------------------
CALL (frontier) {
  UNWIND range(0, size(frontier) - 1) AS fi
  WITH fi, frontier[fi] AS f
  WITH f.n AS u, collect({fi: fi, f: f}) AS visits
  // Once per distinct node of the frontier, whatever the anchors it is on.
  CALL (u) {
    WITH u
    WHERE u:Memory
    MATCH (u)-[r:ASSOCIATED]-(v:Memory)
    RETURN v, r.weight AS w, type(r) AS t, 1.0 AS factor, 0 AS k1, v.id AS k2, 'Memory' AS kind
    UNION ALL
    WITH u
    WHERE u:Memory AND $max_depth > 1
    MATCH (u)-[r:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(v)
    WITH v, r, CASE WHEN v:Domain THEN 1 WHEN v:Trigger THEN 2 ELSE 3 END AS k1
    RETURN v, r.weight AS w, type(r) AS t, 1.0 AS factor, k1, v.name AS k2,
           CASE k1 WHEN 1 THEN 'Domain' WHEN 2 THEN 'Trigger' ELSE 'Concept' END AS kind
    UNION ALL
    WITH u
    WHERE NOT u:Memory
    WITH u, COUNT { (u)<-[:IN_DOMAIN]-() } + COUNT { (u)<-[:HAS_TRIGGER]-() } + COUNT { (u)<-[:ABOUT]-() } AS degree
    WITH u, degree, CASE
      WHEN NOT $penalty THEN 1.0
      WHEN $degree_mode = 'inverse' THEN 1.0 / toFloat(CASE WHEN degree < 1 THEN 1 ELSE degree END)
      ELSE 1.0 / (1.0 + log(1.0 + toFloat(degree) / $pivot))
    END AS factor
    WHERE ($max_hub_degree IS NULL OR degree <= $max_hub_degree) AND factor >= $min_factor
    CALL (u, factor) {
      WITH u, factor
      WHERE u:Domain
      MATCH (v)-[r:IN_DOMAIN]->()
      USING INDEX r:IN_DOMAIN(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
      UNION ALL
      WITH u, factor
      WHERE u:Trigger
      MATCH (v)-[r:HAS_TRIGGER]->()
      USING INDEX r:HAS_TRIGGER(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
      UNION ALL
      WITH u, factor
      WHERE u:Concept
      MATCH (v)-[r:ABOUT]->()
      USING INDEX r:ABOUT(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
    }
    RETURN v, r.weight AS w, type(r) AS t, factor, r.rank AS k1, r.mid AS k2, 'Memory' AS kind
  }
  UNWIND visits AS visit
  WITH visit.fi AS fi, visit.f AS f, v, w, t, kind, k1, k2,
       visit.f.v * $damping * factor * w AS value
  WHERE value > 0.0
  WITH fi, f, v, w, t, kind, k1, k2, value
  ORDER BY fi, k1, k2
  RETURN collect({
    a: f.a,
    n: v,
    v: value,
    p: CASE WHEN $paths THEN f.p + [{type: t, weight: w, kind: kind, name: k2}] ELSE [] END
  }) AS found
}
CALL (best, found) {
  UNWIND [b IN best | {a: b.a, n: b.n, v: b.v, p: b.p, pos: -1}] + [i IN range(0, size(found) - 1) | {a: found[i].a, n: found[i].n, v: found[i].v, p: found[i].p, pos: i}] AS x
  WITH x.a AS a, x.n AS n, collect(x) AS xs
  WITH xs,
       reduce(h = 0.0, y IN xs | CASE WHEN y.pos < 0 THEN y.v ELSE h END) AS held,
       reduce(t = 0.0, y IN xs | CASE WHEN y.pos >= 0 AND y.v > t THEN y.v ELSE t END) AS top
  WITH top > held AS improved,
       CASE WHEN top > held
         THEN reduce(w = null, y IN xs |
           CASE WHEN y.pos >= 0 AND y.v = top AND (w IS NULL OR y.pos < w.pos) THEN y ELSE w END)
         ELSE head([y IN xs WHERE y.pos < 0])
       END AS state
  RETURN collect(state) AS merged, collect(CASE WHEN improved THEN state END) AS improved
}
CALL (improved, barrier) {
  UNWIND improved AS y
  WITH y
  WHERE NOT y.n IN barrier
  WITH y.a AS a, collect(y) AS ys
  CALL (ys) {
    UNWIND ys AS y
    WITH y
    ORDER BY y.v DESC, y.pos
    LIMIT $frontier
    RETURN y
  }
  WITH y
  ORDER BY y.pos
  RETURN collect(y) AS next
}
WITH ais, barrier, merged AS best, CASE WHEN $max_depth >= 2 THEN next ELSE [] END AS frontier

// -- hop 2 --------------------------------------------------------------------
CALL (frontier) {
  UNWIND range(0, size(frontier) - 1) AS fi
  WITH fi, frontier[fi] AS f
  WITH f.n AS u, collect({fi: fi, f: f}) AS visits
  // Once per distinct node of the frontier, whatever the anchors it is on.
  CALL (u) {
    WITH u
    WHERE u:Memory
    MATCH (u)-[r:ASSOCIATED]-(v:Memory)
    RETURN v, r.weight AS w, type(r) AS t, 1.0 AS factor, 0 AS k1, v.id AS k2, 'Memory' AS kind
    UNION ALL
    WITH u
    WHERE u:Memory AND $max_depth > 2
    MATCH (u)-[r:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(v)
    WITH v, r, CASE WHEN v:Domain THEN 1 WHEN v:Trigger THEN 2 ELSE 3 END AS k1
    RETURN v, r.weight AS w, type(r) AS t, 1.0 AS factor, k1, v.name AS k2,
           CASE k1 WHEN 1 THEN 'Domain' WHEN 2 THEN 'Trigger' ELSE 'Concept' END AS kind
    UNION ALL
    WITH u
    WHERE NOT u:Memory
    WITH u, COUNT { (u)<-[:IN_DOMAIN]-() } + COUNT { (u)<-[:HAS_TRIGGER]-() } + COUNT { (u)<-[:ABOUT]-() } AS degree
    WITH u, degree, CASE
      WHEN NOT $penalty THEN 1.0
      WHEN $degree_mode = 'inverse' THEN 1.0 / toFloat(CASE WHEN degree < 1 THEN 1 ELSE degree END)
      ELSE 1.0 / (1.0 + log(1.0 + toFloat(degree) / $pivot))
    END AS factor
    WHERE ($max_hub_degree IS NULL OR degree <= $max_hub_degree) AND factor >= $min_factor
    CALL (u, factor) {
      WITH u, factor
      WHERE u:Domain
      MATCH (v)-[r:IN_DOMAIN]->()
      USING INDEX r:IN_DOMAIN(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
      UNION ALL
      WITH u, factor
      WHERE u:Trigger
      MATCH (v)-[r:HAS_TRIGGER]->()
      USING INDEX r:HAS_TRIGGER(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
      UNION ALL
      WITH u, factor
      WHERE u:Concept
      MATCH (v)-[r:ABOUT]->()
      USING INDEX r:ABOUT(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
    }
    RETURN v, r.weight AS w, type(r) AS t, factor, r.rank AS k1, r.mid AS k2, 'Memory' AS kind
  }
  UNWIND visits AS visit
  WITH visit.fi AS fi, visit.f AS f, v, w, t, kind, k1, k2,
       visit.f.v * $damping * factor * w AS value
  WHERE value > 0.0
  WITH fi, f, v, w, t, kind, k1, k2, value
  ORDER BY fi, k1, k2
  RETURN collect({
    a: f.a,
    n: v,
    v: value,
    p: CASE WHEN $paths THEN f.p + [{type: t, weight: w, kind: kind, name: k2}] ELSE [] END
  }) AS found
}
CALL (best, found) {
  UNWIND [b IN best | {a: b.a, n: b.n, v: b.v, p: b.p, pos: -1}] + [i IN range(0, size(found) - 1) | {a: found[i].a, n: found[i].n, v: found[i].v, p: found[i].p, pos: i}] AS x
  WITH x.a AS a, x.n AS n, collect(x) AS xs
  WITH xs,
       reduce(h = 0.0, y IN xs | CASE WHEN y.pos < 0 THEN y.v ELSE h END) AS held,
       reduce(t = 0.0, y IN xs | CASE WHEN y.pos >= 0 AND y.v > t THEN y.v ELSE t END) AS top
  WITH top > held AS improved,
       CASE WHEN top > held
         THEN reduce(w = null, y IN xs |
           CASE WHEN y.pos >= 0 AND y.v = top AND (w IS NULL OR y.pos < w.pos) THEN y ELSE w END)
         ELSE head([y IN xs WHERE y.pos < 0])
       END AS state
  RETURN collect(state) AS merged, collect(CASE WHEN improved THEN state END) AS improved
}
CALL (improved, barrier) {
  UNWIND improved AS y
  WITH y
  WHERE NOT y.n IN barrier
  WITH y.a AS a, collect(y) AS ys
  CALL (ys) {
    UNWIND ys AS y
    WITH y
    ORDER BY y.v DESC, y.pos
    LIMIT $frontier
    RETURN y
  }
  WITH y
  ORDER BY y.pos
  RETURN collect(y) AS next
}
WITH ais, barrier, merged AS best, CASE WHEN $max_depth >= 3 THEN next ELSE [] END AS frontier

// -- hop 3 (always the last: memories are left only through ASSOCIATED) -------
CALL (frontier) {
  UNWIND range(0, size(frontier) - 1) AS fi
  WITH fi, frontier[fi] AS f
  WITH f.n AS u, collect({fi: fi, f: f}) AS visits
  // Once per distinct node of the frontier, whatever the anchors it is on.
  CALL (u) {
    WITH u
    WHERE u:Memory
    MATCH (u)-[r:ASSOCIATED]-(v:Memory)
    RETURN v, r.weight AS w, type(r) AS t, 1.0 AS factor, 0 AS k1, v.id AS k2, 'Memory' AS kind
    UNION ALL
    WITH u
    WHERE NOT u:Memory
    WITH u, COUNT { (u)<-[:IN_DOMAIN]-() } + COUNT { (u)<-[:HAS_TRIGGER]-() } + COUNT { (u)<-[:ABOUT]-() } AS degree
    WITH u, degree, CASE
      WHEN NOT $penalty THEN 1.0
      WHEN $degree_mode = 'inverse' THEN 1.0 / toFloat(CASE WHEN degree < 1 THEN 1 ELSE degree END)
      ELSE 1.0 / (1.0 + log(1.0 + toFloat(degree) / $pivot))
    END AS factor
    WHERE ($max_hub_degree IS NULL OR degree <= $max_hub_degree) AND factor >= $min_factor
    CALL (u, factor) {
      WITH u, factor
      WHERE u:Domain
      MATCH (v)-[r:IN_DOMAIN]->()
      USING INDEX r:IN_DOMAIN(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
      UNION ALL
      WITH u, factor
      WHERE u:Trigger
      MATCH (v)-[r:HAS_TRIGGER]->()
      USING INDEX r:HAS_TRIGGER(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
      UNION ALL
      WITH u, factor
      WHERE u:Concept
      MATCH (v)-[r:ABOUT]->()
      USING INDEX r:ABOUT(hub, rank, mid)
      WHERE r.hub = $collection + '\u001f' + u.name AND r.rank IS NOT NULL AND r.mid IS NOT NULL
      WITH factor, r, v
      ORDER BY r.hub, r.rank, r.mid
      LIMIT $fanout
      RETURN v, r
    }
    RETURN v, r.weight AS w, type(r) AS t, factor, r.rank AS k1, r.mid AS k2, 'Memory' AS kind
  }
  UNWIND visits AS visit
  WITH visit.fi AS fi, visit.f AS f, v, w, t, kind, k1, k2,
       visit.f.v * $damping * factor * w AS value
  WHERE value > 0.0
  WITH fi, f, v, w, t, kind, k1, k2, value
  ORDER BY fi, k1, k2
  RETURN collect({
    a: f.a,
    n: v,
    v: value,
    p: CASE WHEN $paths THEN f.p + [{type: t, weight: w, kind: kind, name: k2}] ELSE [] END
  }) AS found
}
CALL (best, found) {
  UNWIND [b IN best | {a: b.a, n: b.n, v: b.v, p: b.p, pos: -1}] + [i IN range(0, size(found) - 1) | {a: found[i].a, n: found[i].n, v: found[i].v, p: found[i].p, pos: i}] AS x
  WITH x.a AS a, x.n AS n, collect(x) AS xs
  WITH xs,
       reduce(h = 0.0, y IN xs | CASE WHEN y.pos < 0 THEN y.v ELSE h END) AS held,
       reduce(t = 0.0, y IN xs | CASE WHEN y.pos >= 0 AND y.v > t THEN y.v ELSE t END) AS top
  WITH CASE WHEN top > held
         THEN reduce(w = null, y IN xs |
           CASE WHEN y.pos >= 0 AND y.v = top AND (w IS NULL OR y.pos < w.pos) THEN y ELSE w END)
         ELSE head([y IN xs WHERE y.pos < 0])
       END AS state
  RETURN collect(state) AS merged
}

// -- the memories each anchor reached -----------------------------------------
UNWIND merged AS b
WITH ais[b.a] AS ai, barrier[b.a] AS own, b.n AS node, b.v AS value, b.p AS steps
WHERE node:Memory AND node <> own
  AND node.tier IN $tiers
  AND (size($categories) = 0 OR node.category IN $categories)
  AND (size($domains) = 0 OR any(d IN coalesce(node.domains, []) WHERE d IN $domains))
  AND (size($tags) = 0 OR any(t IN coalesce(node.tags, []) WHERE t IN $tags))
  AND ($exclude_conversation_id IS NULL
       OR NOT $exclude_conversation_id IN coalesce(node.conversation_ids, []))
  AND ($occurred_after IS NULL OR node.occurred_at >= $occurred_after)
  AND ($occurred_before IS NULL OR node.occurred_at < $occurred_before)
  AND (size($speakers) = 0 OR toLower(node.speaker) IN $speakers)
WITH node, ai, value, steps
ORDER BY ai
WITH node, collect({anchor: ai, strength: value, steps: steps}) AS reached
WITH node, reached, reduce(total = 0.0, x IN reached | total + x.strength) AS strength
ORDER BY strength DESC, node.id
LIMIT $max_results
// One row: a hundred records cost the client more than one list of a hundred.
RETURN collect({memory_id: node.id, strength: strength, reached: reached}) AS found
