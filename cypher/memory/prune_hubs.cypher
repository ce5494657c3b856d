// Delete the hubs among $hubs (element ids) that no edge reaches any more. Each
// is locked before its edges are looked at, as memory/delete_memory explains.
UNWIND $hubs AS hub
MATCH (h {collection: $collection})
WHERE elementId(h) = hub
SET h.pruning = true
REMOVE h.pruning
WITH h
WHERE NOT EXISTS { (h)--() }
DELETE h
