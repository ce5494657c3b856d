// One event counter per collection (memory/append_events numbers events from it).
CREATE CONSTRAINT event_log_key IF NOT EXISTS
FOR (l:EventLog) REQUIRE l.collection IS UNIQUE
