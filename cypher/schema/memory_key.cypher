// A memory id is unique within its collection.
CREATE CONSTRAINT memory_key IF NOT EXISTS
FOR (m:Memory) REQUIRE (m.collection, m.id) IS UNIQUE
