// Duplicate detection looks memories up by the hash of their normalized content.
CREATE INDEX memory_hash IF NOT EXISTS
FOR (m:Memory) ON (m.collection, m.content_hash)
