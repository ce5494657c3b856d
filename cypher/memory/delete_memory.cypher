// Delete a memory with every edge that touches it, then the hubs left without
// edges. One row back when the memory existed.
MATCH (m:Memory {collection: $collection, id: $id})
OPTIONAL MATCH (m)-[:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(h)
WITH m, collect(h) AS hubs
DETACH DELETE m
WITH hubs
CALL (hubs) {
  UNWIND hubs AS h
  WITH h
  WHERE NOT EXISTS { (h)--() }
  DELETE h
}
RETURN true AS deleted
