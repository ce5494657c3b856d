// The event log of a collection by when each event happened: the retention
// finds what is older than its bound with one seek (memory/compact_events).
CREATE INDEX event_time IF NOT EXISTS
FOR (e:Event) ON (e.collection, e.at)
