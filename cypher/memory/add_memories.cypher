// Create memories. Each row of $memories holds every property of one node
// (collection, id, doc, the memory's fields, embedding and embedding_model);
// absent values are null and leave no property.
UNWIND $memories AS row
CREATE (m:Memory)
SET m = row
