// A domain name is unique within its collection.
CREATE CONSTRAINT domain_key IF NOT EXISTS
FOR (d:Domain) REQUIRE (d.collection, d.name) IS UNIQUE
