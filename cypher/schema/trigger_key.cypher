// A trigger name is unique within its collection.
CREATE CONSTRAINT trigger_key IF NOT EXISTS
FOR (t:Trigger) REQUIRE (t.collection, t.name) IS UNIQUE
