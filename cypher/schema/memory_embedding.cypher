// Dense recall: cosine similarity over memory vectors of the configured model's
// dimension (vectors of another dimension are not indexed and are searched
// exactly instead).
CREATE VECTOR INDEX memory_embedding IF NOT EXISTS
FOR (m:Memory) ON (m.embedding)
OPTIONS {
  indexConfig: {
    `vector.dimensions`: toInteger($dimensions),
    `vector.similarity_function`: 'cosine'
  }
}
