// One TurnOrder node per conversation of a collection: the lock its NEXT edges'
// writers take (memory/lock_turns). Unique, so that writers who MERGE it at once
// make one node and wait on each other.
CREATE CONSTRAINT turn_order_key IF NOT EXISTS
FOR (o:TurnOrder) REQUIRE (o.collection, o.turn_of) IS UNIQUE
