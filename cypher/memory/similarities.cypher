// The cosine similarity to $vector of each memory among $ids whose own vector is
// of $model and of $vector's dimension (dense search's measure: 2 × the index's
// cosine score − 1), with the vector, which the recall's crowding takes next
// rather than read it again (engine/store/neo4j/recent.py). One row.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
WHERE m.embedding_model = $model AND size(m.embedding) = size($vector)
RETURN collect({
  id: m.id,
  similarity: 2.0 * vector.similarity.cosine(m.embedding, $vector) - 1.0,
  embedding: m.embedding
}) AS hits
