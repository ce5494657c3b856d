// Dense recall: cosine similarity over memory vectors of the configured model's
// dimension (vectors of another dimension are not indexed and are searched
// exactly instead). Quantization (on by default since Neo4j 5.23) is off: it
// makes scores approximate and the order loose. The search statements score
// the index's candidates again exactly anyway, so an index made before this
// setting (which IF NOT EXISTS leaves as it is) still answers exactly.
CREATE VECTOR INDEX memory_embedding IF NOT EXISTS
FOR (m:Memory) ON (m.embedding)
OPTIONS {
  indexConfig: {
    `vector.dimensions`: toInteger($dimensions),
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: false
  }
}
