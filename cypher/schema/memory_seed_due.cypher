// Memories by when they fall due for resurfacing under the seed scheduler
// (memory/due_memories).
CREATE INDEX memory_seed_due IF NOT EXISTS
FOR (m:Memory) ON (m.collection, m.seed_due)
