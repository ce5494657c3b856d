"""The Cypher library: every statement file is used by the Neo4j store, every
statement the store names exists, and the graph it writes is the model's."""

from __future__ import annotations

import ast
import importlib.resources
import re
from pathlib import Path

import pytest

import hippocampus.store.neo4j as neo4j_package
from hippocampus.model import EdgeType, HubKind
from hippocampus.store.neo4j.graph_model import (
    LABELS,
    RELATIONSHIP_TYPES,
    lint_schema,
    property_keys,
)
from hippocampus.store.neo4j.statements import statement

CYPHER = Path(str(importlib.resources.files("hippocampus.cypher")))
PACKAGE = Path(neo4j_package.__file__).parent


def _statement_files() -> set[str]:
    """``area/name`` of every statement file the store may run (the Browser guide's
    queries are for people, not for the store)."""
    return {
        f"{path.parent.name}/{path.stem}"
        for path in CYPHER.rglob("*.cypher")
        if path.parent.name != "browser"
    }


def _names_in_code() -> set[str]:
    """Every statement name the package's code passes to a loader, or lists as a
    string that looks like ``area/verb_noun``."""
    names: set[str] = set()
    for source in PACKAGE.glob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                area, _, verb = node.value.partition("/")
                if area in {"schema", "memory", "recall", "learn"} and verb.isidentifier():
                    names.add(node.value)
    return names


def test_every_statement_file_is_used_by_the_store() -> None:
    unused = _statement_files() - _names_in_code()
    assert not unused, f"statement files no code runs: {sorted(unused)}"


def test_every_statement_the_store_names_exists() -> None:
    missing = _names_in_code() - _statement_files()
    assert not missing, f"statements named in code but missing: {sorted(missing)}"
    for name in _names_in_code():
        assert statement(name).strip()


def test_statements_are_loaded_once_from_package_data() -> None:
    assert statement("memory/get_memories") is statement("memory/get_memories")
    with pytest.raises(ValueError):
        statement("../etc/passwd")
    with pytest.raises(FileNotFoundError):
        statement("memory/no_such_statement")


def test_the_graph_schema_is_the_models() -> None:
    assert set(RELATIONSHIP_TYPES) == {t.value for t in EdgeType}
    assert {"Memory", *(k.value for k in HubKind)} <= set(LABELS)
    keys = property_keys()
    for field in ("content", "confidence", "conversation_ids", "weight", "co_occurrences"):
        assert field in keys
    schema = lint_schema()
    hub_edges = {(p["from"], p["relType"], p["to"]) for p in schema["graphSchema"]}
    assert ("Memory", "ABOUT", "Concept") in hub_edges
    assert ("Memory", "ASSOCIATED", "Memory") in hub_edges


def test_statements_take_values_only_as_parameters() -> None:
    # No Python formatting placeholders: a statement is run exactly as written.
    for path in CYPHER.rglob("*.cypher"):
        text = path.read_text(encoding="utf-8")
        assert "{}" not in text and "%s" not in text and "{0}" not in text, path


def _code(name: str) -> str:
    """A statement without its comments, on one line."""
    lines = (line.split("//", 1)[0] for line in statement(name).splitlines())
    return " ".join(" ".join(lines).split())


@pytest.mark.parametrize("name", ["recall/search_vectors", "recall/search_vectors_many"])
def test_vector_index_answers_are_scored_again_exactly_and_ordered_before_the_cut(
    name: str,
) -> None:
    # The index's scores are approximate (quantized) and its order loose: a
    # statement must not slice the procedure's order, nor report its score.
    code = _code(name)
    assert "vector.similarity.cosine(" in code
    assert "ORDER BY similarity DESC, m.id LIMIT $k" in code
    assert "[0..$k]" not in code
    assert "2.0 * score" not in code


def test_the_vector_index_is_made_without_quantization() -> None:
    assert "`vector.quantization.enabled`: false" in _code("schema/memory_embedding")


def test_full_text_search_reads_a_bounded_number_of_hits() -> None:
    # The limit goes into the procedure: Lucene keeps the best $candidates, the
    # statement never reads every hit of the index.
    assert "queryNodes($index, $query, {limit: $candidates})" in _code("recall/search_text")


_INDEXED_AFTER_COLLECTION = {
    "Memory": ("id", "created_at", "content_hash", "seed_due", "fsrs_due"),
    "Domain": ("name",),
    "Trigger": ("name",),
    "Concept": ("name",),
    "Event": ("appended_at", "seq"),
    "DecayPass": ("period",),
    "State": ("key",),
    "CompactedEvents": ("type",),
    "TurnOrder": ("turn_of",),
    "Count": ("key",),
    "TermCount": ("term",),
}
"""The second properties of the composite indexes that begin with ``collection``
(schema/*.cypher). EventLog's key is ``collection`` alone."""
_COLLECTION_LOOKUP = re.compile(r"\((\w*):(\w+) \{collection: \$collection\}\)")
_NEXT_CLAUSE = re.compile(r"\b(RETURN|WITH|UNION|MATCH|CALL|SET|DELETE|DETACH|ORDER)\b")


def test_collection_lookups_test_the_second_property_of_a_composite_index() -> None:
    # Neo4j uses a composite index only when every one of its properties is
    # tested: `(m:Memory {collection: $c})` alone scans every memory of every
    # collection. Each such lookup must test one of the index's other properties.
    offenders = []
    for name in sorted(_statement_files()):
        code = _code(name)
        for found in _COLLECTION_LOOKUP.finditer(code):
            var, label = found.group(1), found.group(2)
            props = _INDEXED_AFTER_COLLECTION.get(label)
            if props is None:
                continue
            rest = code[found.end() :]
            if rest.startswith("-"):  # the pattern goes on: its WHERE follows it
                rest = rest[rest.index(")") + 1 :] if ")" in rest else rest
            clause = _NEXT_CLAUSE.search(rest)
            where = rest[: clause.start()] if clause else rest
            if not var or not re.search(rf"\b{var}\.({'|'.join(props)})\b", where):
                offenders.append(f"{name}: ({var}:{label} {{collection: $collection}})")
    assert not offenders, "collection lookups no index can serve:\n" + "\n".join(offenders)


def test_hub_degrees_are_counted_from_the_degree_store() -> None:
    # Neo4j answers COUNT { (h)<-[:T]-() } from the node's degree store; a label
    # on the far end, or several types in one pattern, makes it read every edge
    # of the hub (10,000 of them at a domain hub, at every visit).
    for name in sorted(_statement_files()):
        code = _code(name)
        for found in re.finditer(r"COUNT \{ \((\w+)\)<-\[(:[\w|]+)\]-\((.*?)\) \}", code):
            assert "|" not in found.group(2) and found.group(3) == "", (name, found.group(0))
    assert "$min_factor" in _code("recall/expand")
    assert "degree <= $max_hub_degree" in _code("recall/expand")


def test_expansion_reads_a_frontier_node_once_a_hop_whatever_the_anchors() -> None:
    # The anchors walk together: each hop groups its frontier by node and reads
    # a node's edges (a hub's strongest, in the order of the hub's edge index)
    # in one subquery per node, not once per anchor that reached it.
    code = _code("recall/expand")
    hops = code.split("CALL (frontier) {")[1:]
    assert len(hops) == 3
    for hop in hops:
        grouped = hop.index("WITH f.n AS u, collect({fi: fi, f: f}) AS visits CALL (u) {")
        for edge_type in ("IN_DOMAIN", "HAS_TRIGGER", "ABOUT"):
            read = hop.index(
                f"MATCH (v)-[r:{edge_type}]->() USING INDEX r:{edge_type}(hub, rank, mid)"
            )
            assert grouped < read < hop.index("UNWIND visits AS visit")
        assert hop.count("ORDER BY r.hub, r.rank, r.mid LIMIT $fanout") == 3
