// Delete every node of a collection with its edges.
CALL () {
  MATCH (n:Memory {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:Domain {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:Trigger {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:Concept {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:Event {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:DecayPass {collection: $collection})
  RETURN n
  UNION ALL
  MATCH (n:State {collection: $collection})
  RETURN n
}
DETACH DELETE n
