// The event log of a collection is read in the order it was appended.
CREATE INDEX event_order IF NOT EXISTS
FOR (e:Event) ON (e.collection, e.appended_at)
