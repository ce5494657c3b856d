// Collections holding at least one memory.
MATCH (m:Memory)
RETURN DISTINCT m.collection AS collection
ORDER BY collection
