// The full-text index over content with Lucene's English analyzer, which lexical
// recall used before schema version 6 (schema/memory_terms replaces it): every
// write of a memory would keep updating it for nothing.
DROP INDEX memory_content IF EXISTS
