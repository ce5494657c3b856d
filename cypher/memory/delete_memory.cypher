// Delete a memory with every edge that touches it, then the hubs left without
// edges. One row back when the memory existed: the types of the edges deleted
// with it (those leaving it, and those reaching it from other memories: the
// edges memory/read_counts counts) and the kinds of the hubs deleted after it,
// for the collection's counters. The memory is locked first
// (memory/lock_memories), so no edge of it comes or goes meanwhile.
//
// Each hub is locked (a property set and removed: the write lock stays to
// commit) before its edges are looked at, so a writer linking a memory to it
// concurrently either linked first (the hub has an edge and stays) or waits
// and finds it deleted (Neo.ClientError.Statement.EntityNotFound), and the
// store runs its write again, which then makes the hub anew.
MATCH (m:Memory {collection: $collection, id: $id})
OPTIONAL MATCH (m)-[:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(h)
WITH m, collect(h) AS hubs
CALL (m) {
  OPTIONAL MATCH (m)-[r]->()
  RETURN collect(type(r)) AS leaving
}
CALL (m) {
  OPTIONAL MATCH (m)<-[r]-(:Memory)
  RETURN collect(type(r)) AS reaching
}
DETACH DELETE m
WITH hubs, leaving + reaching AS edges
CALL (hubs) {
  UNWIND hubs AS h
  WITH h
  SET h.pruning = true
  REMOVE h.pruning
  WITH h
  WHERE NOT EXISTS { (h)--() }
  WITH h, [kind IN labels(h) WHERE kind IN ['Domain', 'Trigger', 'Concept']][0] AS kind
  DELETE h
  RETURN collect(kind) AS pruned
}
RETURN true AS deleted, edges, pruned
