// The event log of a collection is read by event number, in order.
CREATE INDEX event_seq IF NOT EXISTS
FOR (e:Event) ON (e.collection, e.seq)
