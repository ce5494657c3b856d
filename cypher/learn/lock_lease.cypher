// Take the write lock of the lease $name (making it when there is none), before
// learn/take_lease reads who holds it, in the same transaction: a write locks a
// node until commit, so processes asking for one lease at once ask one after
// the other, and each reads what the one before it wrote. asked counts the asks.
MERGE (l:Lease {name: $name})
SET l.asked = coalesce(l.asked, 0) + 1
