// Lexical recall: memory content, analyzed for English (stop words dropped,
// words stemmed), scored by Lucene's BM25.
CREATE FULLTEXT INDEX memory_content IF NOT EXISTS
FOR (m:Memory) ON EACH [m.content]
OPTIONS {
  indexConfig: {
    `fulltext.analyzer`: 'english'
  }
}
