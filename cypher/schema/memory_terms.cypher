// Lexical recall: each memory's content as the embedded store's text index
// tokenizes it (engine.retrieve.lexical.tokenize: case-folded, stop words
// dropped, lightly stemmed), each term behind its collection's tag
// (engine.store.neo4j.convert.tagged). The whitespace analyzer keeps the terms
// as written; recall/search_text says how they are scored.
CREATE FULLTEXT INDEX memory_terms IF NOT EXISTS
FOR (m:Memory) ON EACH [m.terms]
OPTIONS {
  indexConfig: {
    `fulltext.analyzer`: 'whitespace'
  }
}
