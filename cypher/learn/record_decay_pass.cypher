// Record a finished decay pass for $period (once: a pass of the same period
// that finished first keeps its record).
MERGE (p:DecayPass {collection: $collection, period: $period})
ON CREATE SET p.unused_before = $unused_before, p.decayed = $decayed
