"""The Neo4j Browser guide and style sheet stay in step with the queries and the
graph model."""

from __future__ import annotations

import html
import importlib.resources
import re
from pathlib import Path

from hippocampus.store.neo4j.graph_model import LABELS, RELATIONSHIP_TYPES, property_keys

BROWSER = Path(str(importlib.resources.files("hippocampus.cypher"))) / "browser"
QUERIES = sorted(BROWSER.glob("*.cypher"))
_BLOCK = re.compile(r'<pre class="[^"]*\brunnable\b[^"]*">(.*?)</pre>', re.DOTALL)


def _guide_blocks() -> list[str]:
    text = (BROWSER / "guide.html").read_text(encoding="utf-8")
    return [html.unescape(block).strip() for block in _BLOCK.findall(text)]


def test_the_guide_runs_every_saved_query_exactly_as_linted() -> None:
    blocks = _guide_blocks()
    assert {"collections", "strongest_associations", "memory_neighbourhood"} <= {
        q.stem for q in QUERIES
    }
    for query in QUERIES:
        assert query.read_text(encoding="utf-8").strip() in blocks, query.name
    commands = [b for b in blocks if b.startswith(":")]
    assert len(blocks) == len(QUERIES) + len(commands)
    assert all(c.split()[0] in {":param", ":style"} for c in commands)


def _grass() -> dict[str, dict[str, str]]:
    """The style sheet read the way Neo4j Browser reads it: ``selector { key: value;
    ... }``, single quotes around values that hold braces, no comments."""
    text = (BROWSER / "hippocampus.grass").read_text(encoding="utf-8")
    assert "/*" not in text and "//" not in text  # Browser's parser has no comments
    rules: dict[str, dict[str, str]] = {}
    selector, body, in_body, in_string = "", "", False, False
    for c in text:
        if c == "'":
            in_string = not in_string
        elif c == "{" and not in_string:
            in_body = True
        elif c == "}" and not in_string:
            props = {}
            for item in body.split(";"):
                key, _, value = item.partition(":")
                if key.strip() and value.strip():
                    props[key.strip()] = value.strip()
            rules[selector] = props
            selector, body, in_body = "", "", False
        elif in_body:
            body += c
        elif not c.isspace():
            selector += c
    return rules


def test_the_style_sheet_styles_every_label_and_relationship_type() -> None:
    rules = _grass()
    assert {"node", "relationship"} <= set(rules)
    assert {f"node.{label}" for label in LABELS} <= set(rules)
    assert {f"relationship.{t}" for t in RELATIONSHIP_TYPES} <= set(rules)
    keys = set(property_keys())
    for selector, props in rules.items():
        for name in re.findall(r"\{(\w+)\}", props.get("caption", "")):
            assert name in keys, f"{selector} captions the unknown property {name}"
    assert "{confidence}" in rules["node.Memory"]["caption"]
    assert "{weight}" in rules["relationship.ASSOCIATED"]["caption"]
