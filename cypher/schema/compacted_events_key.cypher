// One count of compacted events per collection and event type, so concurrent
// compactions add to the same node (memory/compact_events).
CREATE CONSTRAINT compacted_events_key IF NOT EXISTS
FOR (c:CompactedEvents) REQUIRE (c.collection, c.type) IS UNIQUE
