// A conversation's turns in the order they happened: NEXT edges are kept in step
// with it, and a turn's neighbours are read from it.
CREATE INDEX memory_turn IF NOT EXISTS
FOR (m:Memory) ON (m.collection, m.turn_of, m.occurred_at)
