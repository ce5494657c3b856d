// The state of the store's indexes (constraints included: each owns one).
SHOW INDEXES
YIELD name, type, state, populationPercent, options
WHERE name IN $names
RETURN name, type, state, populationPercent, options
