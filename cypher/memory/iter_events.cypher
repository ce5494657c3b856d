// A page of the collection's event log in the order it was appended, after the
// event $after ({appended_at, batch, position}); from the start when null.
MATCH (e:Event {collection: $collection})
WHERE $after IS NULL
   OR e.appended_at > $after.appended_at
   OR (e.appended_at = $after.appended_at
       AND (e.batch > $after.batch
            OR (e.batch = $after.batch AND e.position > $after.position)))
RETURN e.type AS type,
       e.at AS at,
       e.memory_ids AS memory_ids,
       e.payload AS payload,
       e.appended_at AS appended_at,
       e.batch AS batch,
       e.position AS position
ORDER BY appended_at, batch, position
LIMIT $limit
