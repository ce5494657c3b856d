// The schema version setup() last applied; null before the first setup().
OPTIONAL MATCH (v:SchemaVersion {name: $name})
RETURN v.version AS version
