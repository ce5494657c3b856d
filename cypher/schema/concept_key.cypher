// A concept name is unique within its collection.
CREATE CONSTRAINT concept_key IF NOT EXISTS
FOR (c:Concept) REQUIRE (c.collection, c.name) IS UNIQUE
