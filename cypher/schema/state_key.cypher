// A state document's key is unique within its collection (and looked up by it).
CREATE CONSTRAINT state_key IF NOT EXISTS
FOR (s:State) REQUIRE (s.collection, s.key) IS UNIQUE
