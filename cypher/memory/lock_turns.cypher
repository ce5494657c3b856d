// Take the write lock of each conversation in $conversations before its turns'
// NEXT edges are read or re-pointed (memory/link_turns): the conversation's
// TurnOrder node, made at its first turn. A write locks a node until commit, so
// writers of one conversation, from any process, relink its turns one after the
// other, and each reads the neighbours the one before it left. (MERGE on the
// unique key makes writers that arrive at once make one node.) $conversations
// come sorted and are locked first in a transaction, before any memory: two
// writers never hold each other's locks. relinks counts the writes.
UNWIND $conversations AS conversation
MERGE (o:TurnOrder {collection: $collection, turn_of: conversation})
SET o.relinks = coalesce(o.relinks, 0) + 1
