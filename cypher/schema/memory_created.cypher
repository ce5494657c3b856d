// Memories are listed oldest first, a page at a time.
CREATE INDEX memory_created IF NOT EXISTS
FOR (m:Memory) ON (m.collection, m.created_at)
