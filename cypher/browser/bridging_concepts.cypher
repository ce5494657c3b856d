// Concepts that bridge domains: talked about by memories of two or more
// domains, the places where one part of the work informs another. (The name
// test lets the planner seek the collection's concepts in concept_key.)
MATCH (c:Concept {collection: $collection})
WHERE c.name IS NOT NULL
MATCH (c)<-[:ABOUT]-(m:Memory)-[:IN_DOMAIN]->(d:Domain)
WITH c, collect(DISTINCT d.name) AS domains, count(DISTINCT m) AS memories
WHERE size(domains) >= 2
RETURN c.name AS concept, domains, memories
ORDER BY size(domains) DESC, memories DESC, concept
LIMIT 25
