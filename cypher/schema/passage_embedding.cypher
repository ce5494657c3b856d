// Dense recall of long memories: cosine similarity over the vectors of their
// passages after the first (the first is the memory's own embedding), of the
// configured model's dimension. Unquantized, as memory_embedding is; the search
// statements score the index's candidates again exactly anyway.
CREATE VECTOR INDEX passage_embedding IF NOT EXISTS
FOR (p:Passage) ON (p.embedding)
OPTIONS {
  indexConfig: {
    `vector.dimensions`: toInteger($dimensions),
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: false
  }
}
