// One decay pass per collection and period: passes are idempotent per period.
CREATE CONSTRAINT decay_pass_key IF NOT EXISTS
FOR (p:DecayPass) REQUIRE (p.collection, p.period) IS UNIQUE
