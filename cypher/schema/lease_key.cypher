// One node per lease: processes that take a lease at once, for the first time,
// make one node, and take their turns at its lock (learn/lock_lease).
CREATE CONSTRAINT lease_key IF NOT EXISTS
FOR (l:Lease) REQUIRE l.name IS UNIQUE
