// Assistants: one system assistant per registered graph, reachable by id
// or by graph id; user assistants with versions.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, graphs, raw, rejects, unique, uuid5, UUID } from "./lib.mjs";

const c = client();

// The graphs cmd/studio registers: examples/ plus the demo.
const registered = [
  "cached-lookup", "cve-agent", "cve-assessment", "cve-assessment-plain-fanin", "demo-review", "flaky-service",
  "map-reduce", "memory-agent", "pregel-lowlevel", "research-subgraph", "transfer-approval",
];

test("every graph has a system assistant: uuid5 of its id, created_by system, named after it", async () => {
  const found = await c.assistants.search({ metadata: { created_by: "system" }, limit: 100 });
  const byGraph = Object.fromEntries(found.map((a) => [a.graph_id, a]));
  assert.deepEqual(Object.keys(byGraph).sort(), registered);
  for (const g of registered) {
    const a = byGraph[g];
    assert.equal(a.assistant_id, await uuid5(g), `${g}'s assistant id`);
    assert.equal(a.name, g);
    assert.equal(a.metadata.created_by, "system");
    assert.equal(typeof a.version, "number");
    assert.equal(typeof a.config, "object");
    assert.ok(!Number.isNaN(Date.parse(a.created_at)));
    assert.ok(!Number.isNaN(Date.parse(a.updated_at)));
  }
});

test("Studio's exact search body pages with X-Pagination-Next and -Total", async () => {
  const res = await raw("/assistants/search", {
    method: "POST",
    headers: { "content-type": "text/plain;charset=UTF-8" }, // Studio avoids a preflight
    body: JSON.stringify({ limit: 10, offset: 0, metadata: { created_by: "system" } }),
  });
  assert.equal(res.status, 200);
  const page = await res.json();
  assert.equal(page.length, 10);
  assert.equal(res.headers.get("x-pagination-next"), "10");
  assert.equal(res.headers.get("x-pagination-total"), String(registered.length));

  const rest = await c.assistants.search({ metadata: { created_by: "system" }, offset: 10, includePagination: true });
  assert.equal(rest.assistants.length, registered.length - 10);
  assert.equal(rest.next, null, "no next offset on the last page");
  const ids = new Set([...page, ...rest.assistants].map((a) => a.assistant_id));
  assert.equal(ids.size, registered.length, "pages overlap");
});

test("search by graph_id, sorted by name; count", async () => {
  const one = await c.assistants.search({ graphId: graphs.transfer });
  assert.deepEqual(one.map((a) => a.graph_id), [graphs.transfer]);
  const sorted = await c.assistants.search({ metadata: { created_by: "system" }, sortBy: "name", sortOrder: "asc", limit: 100 });
  assert.deepEqual(sorted.map((a) => a.name), [...registered].sort());
  assert.equal(await c.assistants.count({ metadata: { created_by: "system" } }), registered.length);
});

test("an assistant is reachable by its graph id, as every endpoint accepts", async () => {
  const byGraph = await c.assistants.get(graphs.transfer);
  const byId = await c.assistants.get(await uuid5(graphs.transfer));
  assert.deepEqual(byGraph, byId);
  await rejects(c.assistants.get("no-such-graph"), 404);
  await rejects(c.assistants.get(randomUUID()), 404);
});

test("graph JSON: nodes, edges, conditional edges; xray flattens the subgraph", async () => {
  const g = await c.assistants.getGraph(graphs.transfer);
  const ids = g.nodes.map((n) => n.id);
  for (const n of ["__start__", "extract", "risk_check", "execute", "reject", "__end__"]) assert.ok(ids.includes(n), `node ${n} in ${ids}`);
  const edge = (s, t) => g.edges.find((e) => e.source === s && e.target === t);
  assert.equal(edge("__start__", "extract")?.conditional, false);
  assert.equal(edge("extract", "risk_check")?.conditional, false);
  assert.equal(edge("risk_check", "execute")?.conditional, true, "risk_check's destinations are conditional edges");
  assert.equal(edge("risk_check", "reject")?.conditional, true);
  assert.equal(edge("execute", "__end__")?.conditional, false);
  for (const n of g.nodes) assert.ok(["schema", "runnable"].includes(n.type), `node ${n.id} type ${n.type}`);

  const flat = await c.assistants.getGraph(graphs.research);
  const flatIds = flat.nodes.map((n) => n.id);
  assert.ok(flatIds.includes("research"), `research in ${flatIds}`);
  assert.ok(!flatIds.some((id) => id.startsWith("research:")), "without xray the subgraph is one node");
  // An edge carries its path-map label only when it differs from the
  // target: "quick" routes to quick_answer, "research" to research.
  const routed = flat.edges.filter((e) => e.source === "classify");
  assert.deepEqual(routed.map((e) => e.target).sort(), ["quick_answer", "research"]);
  assert.ok(routed.every((e) => e.conditional), JSON.stringify(routed));
  assert.equal(routed.find((e) => e.target === "quick_answer").data, "quick");
  assert.equal(routed.find((e) => e.target === "research").data, undefined);

  for (const xray of [true, 1]) {
    const deep = await c.assistants.getGraph(graphs.research, { xray });
    const deepIds = deep.nodes.map((n) => n.id);
    for (const n of ["research:plan", "research:search", "research:review", "research:summarise"]) {
      assert.ok(deepIds.includes(n), `xray=${xray}: ${n} in ${deepIds}`);
    }
  }
});

test("schemas: input, output and state from the Go state type", async () => {
  const s = await c.assistants.getSchemas(graphs.transfer);
  assert.equal(s.graph_id, graphs.transfer);
  for (const k of ["input_schema", "output_schema", "state_schema"]) {
    assert.equal(typeof s[k], "object", `${k} is missing`);
  }
  assert.ok("request" in s.input_schema.properties, JSON.stringify(s.input_schema));
  for (const f of ["request", "recipient", "amount", "decision", "status", "reference"]) {
    assert.ok(f in s.state_schema.properties, `state field ${f}`);
  }
  assert.equal(s.state_schema.properties.amount.type, "number");
  assert.ok("config_schema" in s && "context_schema" in s);
});

test("subgraphs: the research subgraph by namespace, recursively", async () => {
  const subs = await c.assistants.getSubgraphs(graphs.research);
  assert.deepEqual(Object.keys(subs), ["research"]);
  assert.ok("state_schema" in subs.research || "input_schema" in subs.research, JSON.stringify(subs.research));
  const one = await c.assistants.getSubgraphs(graphs.research, { namespace: "research", recurse: true });
  assert.deepEqual(Object.keys(one), ["research"]);
  assert.deepEqual(await c.assistants.getSubgraphs(graphs.transfer), {}, "a graph without subgraphs has none");
});

test("user assistants: create, if_exists, patch makes versions, set latest, delete", async () => {
  const owner = unique("owner");
  const a = await c.assistants.create({
    graphId: graphs.transfer,
    name: "strict approvals",
    description: "transfers with a note",
    config: { configurable: { note: "v1" } },
    metadata: { owner },
  });
  assert.match(a.assistant_id, UUID);
  assert.equal(a.graph_id, graphs.transfer);
  assert.equal(a.version, 1);
  assert.equal(a.name, "strict approvals");
  assert.deepEqual(a.config.configurable, { note: "v1" });
  assert.equal(a.metadata.owner, owner);

  const same = await c.assistants.create({ graphId: graphs.transfer, assistantId: a.assistant_id, ifExists: "do_nothing" });
  assert.equal(same.assistant_id, a.assistant_id);
  assert.equal(same.version, 1, "do_nothing returned something other than the existing assistant");
  await rejects(c.assistants.create({ graphId: graphs.transfer, assistantId: a.assistant_id, ifExists: "raise" }), 409);

  const patched = await c.assistants.update(a.assistant_id, { config: { configurable: { note: "v2" } }, metadata: { stage: "two" } });
  assert.equal(patched.version, 2);
  assert.deepEqual(patched.config.configurable, { note: "v2" });
  assert.equal(patched.metadata.owner, owner, "patching metadata merges it");
  assert.equal(patched.metadata.stage, "two");

  const versions = await c.assistants.getVersions(a.assistant_id);
  assert.deepEqual(versions.map((v) => v.version), [2, 1], "versions, newest first");
  assert.deepEqual(versions[1].config.configurable, { note: "v1" });

  const back = await c.assistants.setLatest(a.assistant_id, 1);
  assert.equal(back.version, 1);
  assert.deepEqual((await c.assistants.get(a.assistant_id)).config.configurable, { note: "v1" });

  assert.deepEqual((await c.assistants.search({ metadata: { owner } })).map((x) => x.assistant_id), [a.assistant_id]);
  assert.equal(await c.assistants.count({ metadata: { owner } }), 1);

  // A user assistant runs its graph.
  const out = await c.runs.wait(null, a.assistant_id, { input: { request: "Please send 20 to Bob Stone." } });
  assert.equal(out.status, "executed");

  assert.equal(await c.assistants.delete(a.assistant_id), undefined, "delete answers 204");
  await rejects(c.assistants.get(a.assistant_id), 404);
});

test("assistant errors: an unknown graph is refused (404 or 422) naming it; bad fields 422 naming them", async () => {
  let err;
  await c.assistants.create({ graphId: "no-such-graph" }).catch((e) => (err = e));
  assert.ok(err && [404, 422].includes(err.status), `create on an unknown graph: ${err?.message ?? "succeeded"}`);
  assert.match(JSON.parse(err.text).detail, /no-such-graph/);
  const bad = await raw("/assistants/search", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ limit: "ten" }) });
  assert.equal(bad.status, 422);
  assert.match((await bad.json()).detail, /limit/);
  const order = await raw("/assistants/search", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sort_by: "colour" }) });
  assert.equal(order.status, 422);
  assert.match((await order.json()).detail, /sort_by/);
  await rejects(c.assistants.update(randomUUID(), { metadata: { a: 1 } }), 404);
  await rejects(c.assistants.delete(randomUUID()), 404);
  await rejects(c.assistants.getGraph("no-such-graph"), 404);
});
