// One schema version node per schema owner.
CREATE CONSTRAINT schema_version_key IF NOT EXISTS
FOR (v:SchemaVersion) REQUIRE v.name IS UNIQUE
