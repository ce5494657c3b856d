// Edge counts by type (ASSOCIATED counted once).
MATCH (:Memory {collection: $collection})-[r]->()
RETURN type(r) AS type, count(r) AS n
