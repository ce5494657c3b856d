// Hubs of any kind named exactly one of $names, with their degree (memories
// linked: counted per type with nothing asked of the far end, which Neo4j
// answers from the degree store); in the order of $names, then Domain,
// Trigger, Concept.
UNWIND range(0, size($names) - 1) AS i
WITH i, $names[i] AS name
CALL (name) {
  MATCH (h:Domain {collection: $collection, name: name})
  RETURN 'Domain' AS kind, 0 AS rank, h
  UNION ALL
  MATCH (h:Trigger {collection: $collection, name: name})
  RETURN 'Trigger' AS kind, 1 AS rank, h
  UNION ALL
  MATCH (h:Concept {collection: $collection, name: name})
  RETURN 'Concept' AS kind, 2 AS rank, h
}
RETURN kind, name, COUNT { (h)<-[:IN_DOMAIN]-() } + COUNT { (h)<-[:HAS_TRIGGER]-() } + COUNT { (h)<-[:ABOUT]-() } AS degree
ORDER BY i, rank
