// Crowding measures against a sample of a collection's vectors of one model:
// memories of that model in the order of their content hashes (sha256, spread
// evenly), read from a random hash on (memory/sample_vectors).
CREATE INDEX memory_sample IF NOT EXISTS
FOR (m:Memory) ON (m.collection, m.embedding_model, m.content_hash)
