// Delete a memory's edges to its domains, triggers and concepts; return the hubs
// they reached, to prune once the new edges are written.
OPTIONAL MATCH (:Memory {collection: $collection, id: $id})-[r:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(h)
DELETE r
RETURN collect(DISTINCT elementId(h)) AS hubs
