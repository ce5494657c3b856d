// Take the lease $name for $holder until $ttl_ms milliseconds from now when no
// one holds it, its term has run out, or $holder holds it already; say whether
// $holder holds it now. Its write lock is held (learn/lock_lease). Terms run on
// the server's clock: the one clock every process sharing the database reads.
// The maintenance round takes one, so that one API process runs each round.
MATCH (l:Lease {name: $name})
WITH l, datetime() AS now
WITH l, now, l.holder IS NULL OR l.holder = $holder OR l.expires_at <= now AS free
SET l.holder = CASE WHEN free THEN $holder ELSE l.holder END,
    l.expires_at = CASE
      WHEN free THEN now + duration({milliseconds: $ttl_ms})
      ELSE l.expires_at
    END
RETURN free AS taken
