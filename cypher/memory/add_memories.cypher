// Create memories. Each row of $memories holds every property of one node
// (collection, id, doc, the memory's fields, embedding and embedding_model);
// absent values are null and leave no property. The embedding is written by
// db.create.setNodeVectorProperty, which keeps it as a float32 array: half the
// size of the list of 64-bit floats a driver's list becomes under SET.
UNWIND $memories AS row
CREATE (m:Memory)
SET m = row {.*, embedding: null}
WITH m, row
WHERE row.embedding IS NOT NULL
CALL db.create.setNodeVectorProperty(m, 'embedding', row.embedding)
