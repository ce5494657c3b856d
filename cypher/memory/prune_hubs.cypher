// Delete the hubs among $hubs (element ids) that no edge reaches any more.
UNWIND $hubs AS hub
MATCH (h {collection: $collection})
WHERE elementId(h) = hub AND NOT EXISTS { (h)--() }
DELETE h
