// Up to $size stored vectors of $model, spread evenly over the collection's
// memories taken in id order (all of them when there are no more), with how many
// memories of the collection have a vector of that model. (The id test lets the
// planner seek the (collection, id) index in id order: Neo4j uses a composite
// index only when every property is tested.)
MATCH (m:Memory {collection: $collection})
WHERE m.id IS NOT NULL AND m.embedding IS NOT NULL AND m.embedding_model = $model
WITH m.id AS id
ORDER BY id
WITH collect(id) AS ids
WITH ids, size(ids) AS total
WITH ids, total,
     CASE WHEN total > $size THEN toFloat(total) / $size ELSE 1.0 END AS step,
     CASE WHEN total > $size THEN $size ELSE total END AS taken
UNWIND range(0, taken - 1) AS i
WITH total, ids[toInteger(floor(i * step))] AS id
MATCH (s:Memory {collection: $collection, id: id})
RETURN total, s.id AS id, s.embedding AS embedding
ORDER BY id
