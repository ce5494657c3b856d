// Delete the hubs among $hubs (element ids) that no edge reaches any more. Each
// is locked before its edges are looked at, as memory/delete_memory explains.
// One row per kind of hub deleted, with how many, for the collection's counters.
UNWIND $hubs AS hub
MATCH (h {collection: $collection})
WHERE elementId(h) = hub
SET h.pruning = true
REMOVE h.pruning
WITH h
WHERE NOT EXISTS { (h)--() }
WITH h, [kind IN labels(h) WHERE kind IN ['Domain', 'Trigger', 'Concept']][0] AS kind
DELETE h
RETURN kind, count(*) AS n
