// Record the schema version setup() applied.
MERGE (v:SchemaVersion {name: $name})
SET v.version = $version
