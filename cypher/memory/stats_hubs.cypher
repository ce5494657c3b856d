// Hub counts by kind.
CALL () {
  MATCH (h:Domain {collection: $collection})
  RETURN 'Domain' AS kind, count(h) AS n
  UNION ALL
  MATCH (h:Trigger {collection: $collection})
  RETURN 'Trigger' AS kind, count(h) AS n
  UNION ALL
  MATCH (h:Concept {collection: $collection})
  RETURN 'Concept' AS kind, count(h) AS n
}
RETURN kind, n
