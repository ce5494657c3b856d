// Schema version 1 to 2: memories get occurred_at (their creation: none had one
// yet) and turn_of (their first conversation id), and the turns of each
// conversation are linked in order by NEXT edges.
MATCH (m:Memory)
WHERE m.occurred_at IS NULL
SET m.occurred_at = m.created_at,
    m.turn_of = m.conversation_ids[0]
WITH count(m) AS updated
CALL () {
  MATCH (m:Memory)
  WHERE m.turn_of IS NOT NULL
  WITH m
  ORDER BY m.occurred_at, m.id
  WITH m.collection AS collection, m.turn_of AS conversation, collect(m) AS turns
  UNWIND range(0, size(turns) - 2) AS i
  WITH turns[i] AS a, turns[i + 1] AS b
  MERGE (a)-[r:NEXT]->(b)
  ON CREATE SET r.weight = 1.0, r.co_occurrences = 0, r.kind = 'sequence',
                r.created_at = datetime(), r.used_at = datetime()
}
RETURN updated
