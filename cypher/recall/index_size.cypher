// How many memories the database holds, of every collection: at least as many
// as the vector index of memories holds, which they all share. Answered from
// the count store, whatever the size.
MATCH (m:Memory)
RETURN count(m) AS memories
