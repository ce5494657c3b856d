// A Trigger hub's edges strongest first: its key (the collection, U+001F, the
// hub's name), then rank (the weight negated), then the memory's id. Expansion
// leaves a hub through its strongest edges by seeking this index in order and
// stopping after $fanout, instead of reading and sorting every edge the hub has.
CREATE INDEX trigger_edge_rank IF NOT EXISTS
FOR ()-[r:HAS_TRIGGER]-() ON (r.hub, r.rank, r.mid)
