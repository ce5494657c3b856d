// A passage is unique by its memory and its place in it, within a collection;
// the constraint's index finds a memory's passages by (collection, memory_id).
CREATE CONSTRAINT passage_key IF NOT EXISTS
FOR (p:Passage) REQUIRE (p.collection, p.memory_id, p.n) IS UNIQUE
