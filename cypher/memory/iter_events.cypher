// A page of the collection's event log in the order it was appended: the events
// numbered after $after (-1: from the start), by their number. Numbers are given
// in commit order (memory/append_events), so a page never skips an event a
// slower writer commits later. The range on seq seeks event_seq, in order.
MATCH (e:Event {collection: $collection})
WHERE e.seq > $after
RETURN e.type AS type,
       e.at AS at,
       e.memory_ids AS memory_ids,
       e.payload AS payload,
       e.seq AS seq
ORDER BY seq
LIMIT $limit
