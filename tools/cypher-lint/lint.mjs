// Lints Cypher statements with Neo4j's own Cypher language support: syntax,
// semantic analysis, the procedure and function catalog, and labels,
// relationship types and property keys against the project's graph schema.
//
// Reads JSON on stdin: {"schema": DbSchema, "queries": [{"name", "text"}]}.
// Writes JSON on stdout: {"results": [{"name", "diagnostics": [...]}]}.
// Driven by lint.py, which derives the schema from the Python models.

import { isNotParamError, lintCypherQuery, testData } from '@neo4j-cypher/language-support';

// Plugins the deployment does not run: a call into one of them must fail the lint.
const PLUGIN_PREFIXES = ['apoc.', 'gds.'];
const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };

function withoutPlugins(registry) {
  return Object.fromEntries(
    Object.entries(registry ?? {}).filter(
      ([name]) => !PLUGIN_PREFIXES.some((prefix) => name.startsWith(prefix)),
    ),
  );
}

// The catalog of built-in procedures and functions the package ships in its
// test data (as Neo4j lists them), per Cypher version.
function catalog(kind) {
  const scoped = testData.mockSchema[kind] ?? {};
  return Object.fromEntries(
    Object.entries(scoped).map(([version, registry]) => [version, withoutPlugins(registry)]),
  );
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const request = JSON.parse(await readStdin());
const schema = {
  ...request.schema,
  procedures: catalog('procedures'),
  functions: catalog('functions'),
};

const results = request.queries.map(({ name, text }) => {
  const { diagnostics } = lintCypherQuery(text, schema);
  return {
    name,
    diagnostics: diagnostics.filter(isNotParamError).map((d) => ({
      severity: SEVERITY[d.severity] ?? 'error',
      message: d.message,
      line: d.range.start.line + 1,
      column: d.range.start.character + 1,
    })),
  };
});

process.stdout.write(JSON.stringify({ results }));
