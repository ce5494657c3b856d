// The graph explorer: reads the public API only (/graph, /recall, /memories/{id})
// with the user's key, and draws what it answers with cytoscape.
(function () {
  "use strict";

  const COLORS = { Memory: "#4e79a7", Concept: "#f28e2b", Trigger: "#59a14f", Domain: "#b07aa1" };
  const $ = (id) => document.getElementById(id);
  const state = { key: "", collection: "" };

  // The key may come in the URL's fragment (never sent to the server); it is kept
  // for this tab only and wiped from the address bar.
  const fragment = new URLSearchParams(location.hash.slice(1));
  const params = new URLSearchParams(location.search);
  state.key = fragment.get("key") || sessionStorage.getItem("hippo-key") || "";
  if (fragment.has("key")) history.replaceState(null, "", location.pathname + location.search);
  state.collection = params.get("collection") || localStorage.getItem("hippo-collection") || "";
  $("key").value = state.key;
  $("collection").value = state.collection;

  const cy = cytoscape({
    container: $("graph"),
    wheelSensitivity: 0.3,
    style: [
      {
        selector: "node",
        style: {
          "background-color": (n) => COLORS[n.data("kind")] || "#999",
          label: "data(short)",
          "font-size": 9,
          color: "#333",
          "text-wrap": "ellipsis",
          "text-max-width": 110,
          width: (n) => n.data("size"),
          height: (n) => n.data("size"),
        },
      },
      { selector: "node.center", style: { "border-width": 3, "border-color": "#222" } },
      { selector: "node:selected", style: { "border-width": 3, "border-color": "#e15759" } },
      {
        selector: "edge",
        style: {
          width: (e) => 1 + 6 * Math.max(0, Math.min(1, e.data("weight"))),
          "line-color": "#bbb",
          "curve-style": "bezier",
          opacity: 0.8,
        },
      },
      { selector: "edge[type = 'ASSOCIATED']", style: { "line-color": "#777" } },
      {
        selector: "edge[type = 'CONFLICTS_WITH']",
        style: { "line-color": "#e15759", "line-style": "dashed" },
      },
      {
        selector: "edge[type = 'SUPERSEDES']",
        style: { "line-color": "#ff9da7", "target-arrow-color": "#ff9da7", "target-arrow-shape": "triangle" },
      },
      { selector: ".path", style: { "line-color": "#edc948", "border-color": "#edc948", "border-width": 3, opacity: 1 } },
    ],
  });

  function status(text, error) {
    $("status").textContent = text;
    $("status").className = error ? "error" : "";
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (state.key) headers.Authorization = "Bearer " + state.key;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const base = "/v1/collections/" + encodeURIComponent(state.collection);
    const r = await fetch(base + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) {
      const message = (data.error && data.error.message) || r.statusText;
      throw new Error(r.status + ": " + message);
    }
    return data;
  }

  function nodeSize(kind, confidence) {
    if (kind !== "Memory") return 16;
    return 14 + 34 * (confidence == null ? 0.5 : confidence);
  }

  function addNode(id, kind, label, confidence) {
    const existing = cy.getElementById(id);
    const data = {
      id, kind, label,
      short: label.length > 40 ? label.slice(0, 39) + "…" : label,
      confidence, size: nodeSize(kind, confidence),
    };
    if (existing.nonempty()) {
      if (confidence != null) existing.data(data);
      return existing;
    }
    return cy.add({ group: "nodes", data });
  }

  function addEdge(source, type, target, weight, extra) {
    const id = source + "|" + type + "|" + target;
    if (cy.getElementById(id).nonempty()) return cy.getElementById(id);
    return cy.add({ group: "edges", data: Object.assign({ id, source, target, type, weight }, extra || {}) });
  }

  function publish() {
    // The drawn model, for scripts and the browser test.
    const model = {
      nodes: cy.nodes().map((n) => n.id()).sort(),
      edges: cy.edges().map((e) => [e.data("source"), e.data("type"), e.data("target")]).sort(),
    };
    $("drawn-model").textContent = JSON.stringify(model);
    window.hippoExplorer.model = model;
  }

  function layout() {
    cy.layout({ name: "cose", animate: false, randomize: false, nodeRepulsion: 9000, idealEdgeLength: 70 }).run();
    cy.fit(undefined, 30);
  }

  async function expand(center) {
    status("loading " + center + "…");
    const g = await api("GET", "/graph?depth=1&max_nodes=150&center=" + encodeURIComponent(center));
    cy.batch(() => {
      for (const n of g.nodes) addNode(n.id, n.kind, n.label, n.confidence);
      for (const e of g.edges) addEdge(e.source, e.type, e.target, e.weight, { kind: e.kind });
    });
    cy.nodes().removeClass("center");
    cy.getElementById(g.center).addClass("center");
    layout();
    publish();
    status(g.nodes.length + " nodes, " + g.edges.length + " edges around " + g.center);
    return g;
  }

  async function showDetails(node) {
    const box = $("details");
    box.textContent = "";
    const title = document.createElement("h3");
    title.textContent = node.data("kind") + ": " + node.data("label");
    box.appendChild(title);
    if (node.data("kind") !== "Memory") return;
    const id = node.id().slice("Memory:".length);
    const m = await api("GET", "/memories/" + encodeURIComponent(id));
    // Each hub with the weight of the memory's edge to it, as learning left it.
    const hubs = (list) => list.map((h) => h.name + " " + h.weight.toFixed(2)).join(", ");
    const rows = [
      ["id", m.id], ["category", m.category], ["confidence", m.retrieval.confidence.toFixed(2)],
      ["importance", m.importance], ["tags", m.tags.join(", ")],
      ["domains", hubs(m.hubs.domains)], ["concepts", hubs(m.hubs.concepts)],
      ["triggers", hubs(m.hubs.triggers)], ["used", m.retrieval.usage_count + " times"],
    ];
    const dl = document.createElement("dl");
    for (const [k, v] of rows) {
      const dt = document.createElement("dt"); dt.textContent = k;
      const dd = document.createElement("dd"); dd.textContent = String(v);
      dl.append(dt, dd);
    }
    const content = document.createElement("p");
    content.textContent = m.content;
    box.append(content, dl);
  }

  const known = new Map(); // memory id → its content, from recall results

  function nodeName(kind, name) {
    if (kind !== "Memory") return kind + ":" + name;
    const content = known.get(name);
    return content ? "“" + content.slice(0, 28) + "…”" : "Memory:" + name.slice(0, 8);
  }

  function pathText(p) {
    return [nodeName(p.anchor.kind, p.anchor.name)]
      .concat(p.steps.map((s) => "—" + s.type + " " + s.weight.toFixed(2) + "→ " + nodeName(s.kind, s.name)))
      .join(" ") + " (" + p.strength.toFixed(3) + ")";
  }

  function drawPaths(hit) {
    // Each path: anchor → steps… → the memory; its edges run from a memory to a hub
    // (or memory to memory), whichever way the walk crossed them.
    cy.elements().removeClass("path");
    for (const p of hit.paths || []) {
      const anchorLabel = known.get(p.anchor.name) || p.anchor.name;
      let previous = addNode(p.anchor.kind + ":" + p.anchor.name, p.anchor.kind, anchorLabel, null);
      previous.addClass("path");
      for (const s of p.steps) {
        const label = (s.kind === "Memory" && known.get(s.name)) || s.name;
        const here = addNode(s.kind + ":" + s.name, s.kind, label,
          s.name === hit.id ? hit.memory.retrieval.confidence : null);
        const [from, to] = previous.data("kind") === "Memory" ? [previous, here] : [here, previous];
        addEdge(from.id(), s.type, to.id(), s.weight).addClass("path");
        here.addClass("path");
        previous = here;
      }
    }
  }

  async function recall(query) {
    status("recalling…");
    const r = await api("POST", "/recall", { query, limit: 10, explain: true, detail: "full" });
    const list = $("results");
    list.textContent = "";
    for (const hit of r.results) known.set(hit.id, hit.memory.content);
    r.results.forEach((hit, i) => {
      const div = document.createElement("div");
      div.className = "hit";
      div.dataset.id = hit.id;
      const score = document.createElement("span");
      score.className = "score";
      score.textContent = hit.score.toFixed(3);
      const text = document.createElement("div");
      text.textContent = (i + 1) + ". [" + hit.memory.category + "] " + hit.memory.content.slice(0, 120);
      div.append(score, text);
      for (const p of hit.paths || []) {
        const line = document.createElement("div");
        line.className = "path";
        line.textContent = pathText(p);
        div.appendChild(line);
      }
      div.addEventListener("click", () => run(async () => {
        document.querySelectorAll(".hit.selected").forEach((x) => x.classList.remove("selected"));
        div.classList.add("selected");
        await expand("Memory:" + hit.id);
        drawPaths(hit);
        layout();
        publish();
      }));
      list.appendChild(div);
    });
    window.hippoExplorer.results = r.results.map((h) => h.id);
    list.dataset.results = JSON.stringify(window.hippoExplorer.results);
    status(r.results.length + " results for “" + query + "”" + (r.warnings.length ? " — " + r.warnings.join("; ") : ""));
    if (r.results.length) {
      await expand("Memory:" + r.results[0].id);
      drawPaths(r.results[0]);
      layout();
      publish();
    }
  }

  async function run(task) {
    document.body.dataset.state = "busy";
    try {
      await task();
    } catch (e) {
      status(e.message, true);
    } finally {
      document.body.dataset.state = "ready";
    }
  }

  function readSettings() {
    state.collection = $("collection").value.trim();
    state.key = $("key").value.trim();
    sessionStorage.setItem("hippo-key", state.key);
    localStorage.setItem("hippo-collection", state.collection);
    if (!state.collection) throw new Error("name a collection first");
  }

  // For scripts and the browser test: what is drawn, the recall results, and the
  // graph itself (e.g. hippoExplorer.cy.$id("Concept:redis").emit("tap") expands a node).
  window.hippoExplorer = { model: { nodes: [], edges: [] }, results: [], cy };

  $("search").addEventListener("submit", (ev) => {
    ev.preventDefault();
    run(async () => { readSettings(); await recall($("query").value.trim()); });
  });
  $("open").addEventListener("submit", (ev) => {
    ev.preventDefault();
    run(async () => { readSettings(); await expand($("center").value.trim()); });
  });
  $("clear").addEventListener("click", () => { cy.elements().remove(); publish(); });
  cy.on("tap", "node", (ev) => run(async () => {
    readSettings();
    await showDetails(ev.target);
    await expand(ev.target.id());
  }));

  // ?collection=…&center=… or &q=… opens straight away (links, scripts, tests).
  const first = params.get("q") ? () => recall(params.get("q"))
    : params.get("center") ? () => expand(params.get("center")) : null;
  if (params.get("q")) $("query").value = params.get("q");
  if (params.get("center")) $("center").value = params.get("center");
  if (first && state.collection) {
    run(async () => { readSettings(); await first(); });
  } else {
    document.body.dataset.state = "ready";
  }
})();
