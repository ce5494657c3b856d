// The memories among $ids: the stored document and the model of the stored vector.
UNWIND $ids AS id
MATCH (m:Memory {collection: $collection, id: id})
RETURN m.id AS id, m.doc AS doc, m.embedding_model AS embedding_model
