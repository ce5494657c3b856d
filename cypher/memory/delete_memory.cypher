// Delete a memory with every edge that touches it, then the hubs left without
// edges. One row back when the memory existed.
//
// Each hub is locked (a property set and removed: the write lock stays to
// commit) before its edges are looked at, so a writer linking a memory to it
// concurrently either linked first (the hub has an edge and stays) or waits
// and finds it deleted (Neo.ClientError.Statement.EntityNotFound), and the
// store runs its write again, which then makes the hub anew.
MATCH (m:Memory {collection: $collection, id: $id})
OPTIONAL MATCH (m)-[:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(h)
WITH m, collect(h) AS hubs
DETACH DELETE m
WITH hubs
CALL (hubs) {
  UNWIND hubs AS h
  WITH h
  SET h.pruning = true
  REMOVE h.pruning
  WITH h
  WHERE NOT EXISTS { (h)--() }
  DELETE h
}
RETURN true AS deleted
