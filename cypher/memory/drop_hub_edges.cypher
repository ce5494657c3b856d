// Delete a memory's edges to its domains, triggers and concepts; return the hubs
// they reached, to prune once the new edges are written, and the types of the
// edges deleted, for the collection's counters.
OPTIONAL MATCH (:Memory {collection: $collection, id: $id})-[r:IN_DOMAIN|HAS_TRIGGER|ABOUT]->(h)
WITH r, h, type(r) AS type
DELETE r
RETURN collect(DISTINCT elementId(h)) AS hubs, collect(type) AS types
