// Memories by when they fall due for resurfacing under the FSRS-style
// scheduler (memory/due_memories).
CREATE INDEX memory_fsrs_due IF NOT EXISTS
FOR (m:Memory) ON (m.collection, m.fsrs_due)
