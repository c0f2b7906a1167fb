// Streaming runs: every stream_mode, subgraph events named "mode|ns",
// Send fan-outs, a chat model's messages, errors in the stream, stateless
// runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, collect, events, graphs, inputs, UUID } from "./lib.mjs";

const c = client();
const small = { request: "Please send 20 to Bob Stone for lunch." }; // under the limit: no interrupt

async function newThread() {
  return (await c.threads.create()).thread_id;
}

test("values: metadata first, then the state after each step, the last one final", async () => {
  const tid = await newThread();
  let created;
  const chunks = await collect(
    c.runs.stream(tid, graphs.transfer, { input: small, streamMode: "values", onRunCreated: (m) => (created = m) }),
  );
  assert.equal(chunks[0].event, "metadata");
  assert.match(chunks[0].data.run_id, UUID);
  assert.equal(created?.run_id, chunks[0].data.run_id, "onRunCreated (from Content-Location) names the streamed run");
  assert.equal(created?.thread_id, tid);
  assert.deepEqual([...new Set(events(chunks))], ["metadata", "values"]);
  const values = chunks.filter((e) => e.event === "values").map((e) => e.data);
  assert.equal(values[0].request, small.request, "the first values event is the input");
  assert.equal(values.at(-1).status, "executed");
  assert.equal(values.at(-1).decision, "auto-approved");
  const ids = chunks.map((e) => e.id).filter((x) => x != null);
  assert.equal(new Set(ids).size, ids.length, "event ids repeat");
  assert.deepEqual((await c.threads.getState(tid)).values, values.at(-1));
});

test("updates: one event per finished node, with its writes", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.transfer, { input: small, streamMode: "updates" }));
  const nodes = chunks.filter((e) => e.event === "updates").map((e) => Object.keys(e.data)[0]);
  assert.deepEqual(nodes, ["extract", "risk_check", "execute"]);
  const extract = chunks.find((e) => e.event === "updates" && "extract" in e.data).data.extract;
  assert.equal(extract.amount, 20);
  assert.equal(extract.recipient.replace(/\.$/, ""), "Bob Stone");
});

test("several modes at once; an interrupt shows as __interrupt__ in values and updates", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.transfer, { input: inputs[graphs.transfer], streamMode: ["values", "updates"] }));
  assert.equal(chunks[0].event, "metadata");
  const vInt = chunks.filter((e) => e.event === "values" && "__interrupt__" in e.data);
  const uInt = chunks.filter((e) => e.event === "updates" && "__interrupt__" in e.data);
  assert.equal(vInt.length, 1, "values carries the interrupt once");
  assert.equal(uInt.length, 1, "updates carries the interrupt once");
  const [intr] = vInt[0].data.__interrupt__;
  assert.equal(intr.value.amount, 2500);
  assert.equal(typeof intr.id, "string");
  assert.deepEqual(uInt[0].data.__interrupt__, vInt[0].data.__interrupt__);
});

test("debug: checkpoint, task and task_result events; checkpoints carry checkpoint and parent_checkpoint", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.transfer, { input: small, streamMode: "debug" }));
  const debug = chunks.filter((e) => e.event === "debug").map((e) => e.data);
  const types = new Set(debug.map((d) => d.type));
  for (const t of ["checkpoint", "task", "task_result"]) assert.ok(types.has(t), `no ${t} in ${[...types]}`);
  for (const d of debug) {
    assert.equal(typeof d.step, "number");
    assert.ok(!Number.isNaN(Date.parse(d.timestamp)), `timestamp ${d.timestamp}`);
  }
  const cps = debug.filter((d) => d.type === "checkpoint").map((d) => d.payload);
  for (const p of cps) {
    for (const k of ["config", "values", "metadata", "next", "tasks", "checkpoint"]) assert.ok(k in p, `checkpoint payload lacks ${k}`);
    assert.equal(p.checkpoint.thread_id, tid);
  }
  assert.equal(cps[0].parent_checkpoint ?? null, null);
  for (let i = 1; i < cps.length; i++) assert.equal(cps[i].parent_checkpoint.checkpoint_id, cps[i - 1].checkpoint.checkpoint_id);
  const task = debug.find((d) => d.type === "task" && d.payload.name === "extract").payload;
  assert.ok(task.id && "input" in task && Array.isArray(task.triggers), JSON.stringify(task));
  const result = debug.find((d) => d.type === "task_result" && d.payload.name === "extract").payload;
  assert.equal(result.id, task.id);
  assert.equal(result.error ?? null, null);
});

test("tasks and checkpoints modes: the same payloads without the debug wrapper", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.transfer, { input: small, streamMode: ["tasks", "checkpoints"] }));
  const tasks = chunks.filter((e) => e.event === "tasks").map((e) => e.data);
  const starts = tasks.filter((t) => "input" in t).map((t) => t.name);
  const results = tasks.filter((t) => "result" in t);
  assert.deepEqual(starts, ["extract", "risk_check", "execute"]);
  assert.equal(results.length, 3);
  const cps = chunks.filter((e) => e.event === "checkpoints").map((e) => e.data);
  assert.ok(cps.length >= 4, `${cps.length} checkpoints`);
  for (const p of cps) for (const k of ["config", "values", "metadata", "next", "tasks"]) assert.ok(k in p, `checkpoints payload lacks ${k}`);
  assert.deepEqual(cps.at(-1).next, []);
});

test("custom mode is accepted (events, if any, carry the node's JSON)", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.transfer, { input: small, streamMode: ["custom", "values"] }));
  assert.equal(chunks[0].event, "metadata");
  assert.ok(chunks.some((e) => e.event === "values"));
  assert.ok(chunks.every((e) => ["metadata", "values", "custom"].includes(e.event)), events(chunks).join(","));
});

test("stream_subgraphs: the subgraph's events are named mode|research:<task id>", async () => {
  const tid = await newThread();
  const flat = await collect(c.runs.stream(tid, graphs.research, { input: inputs[graphs.research], streamMode: ["updates"] }));
  assert.ok(flat.every((e) => !e.event.includes("|")), "without stream_subgraphs only root events come");

  const t2 = await newThread();
  const deep = await collect(c.runs.stream(t2, graphs.research, { input: inputs[graphs.research], streamMode: ["updates", "values"], streamSubgraphs: true }));
  const sub = deep.filter((e) => e.event.includes("|"));
  assert.ok(sub.length > 0, `no subgraph events: ${events(deep)}`);
  for (const e of sub) assert.match(e.event, /^(updates|values)\|research:[^|]+$/, e.event);
  const subNodes = sub.filter((e) => e.event.startsWith("updates|")).map((e) => Object.keys(e.data)[0]);
  assert.deepEqual(subNodes.filter((n) => n !== "__interrupt__"), ["plan", "search"], "the subgraph's nodes up to the review");
  assert.ok(deep.some((e) => e.event === "updates" && "classify" in e.data), "root events still come unprefixed");
  const ns = new Set(sub.map((e) => e.event.split("|")[1]));
  assert.equal(ns.size, 1, `one subgraph task, one namespace: ${[...ns]}`);
});

test("Send fan-out: one summarise update per section, combined in order", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.mapReduce, { input: inputs[graphs.mapReduce], streamMode: ["updates", "values"] }));
  const nodes = chunks.filter((e) => e.event === "updates").map((e) => Object.keys(e.data)[0]);
  assert.deepEqual(nodes, ["plan", "summarise", "summarise", "summarise", "combine"]);
  const last = chunks.filter((e) => e.event === "values").at(-1).data;
  assert.deepEqual(last.summaries.map((s) => s.heading), ["Plan", "Risks", "Budget"]);
  assert.equal(typeof last.digest, "string");
  assert.ok(last.digest.length > 0);
});

test("messages-tuple: the chat model's messages as [message, metadata]", async () => {
  const tid = await newThread();
  const chunks = await collect(
    c.runs.stream(tid, graphs.cveAgent, { input: inputs[graphs.cveAgent], streamMode: ["messages-tuple"], streamSubgraphs: true }),
  );
  const msgs = chunks.filter((e) => e.event === "messages" || e.event.startsWith("messages|"));
  assert.ok(msgs.length > 0, `no messages events: ${[...new Set(events(chunks))]}`);
  for (const m of msgs) {
    assert.ok(Array.isArray(m.data) && m.data.length === 2, JSON.stringify(m.data));
    const [message, meta] = m.data;
    assert.equal(typeof message, "object");
    assert.ok("content" in message, JSON.stringify(message));
    assert.equal(typeof meta.langgraph_node, "string");
  }
  assert.ok(msgs.some((m) => m.data[0].type === "ai" || m.data[0].type === "AIMessageChunk"), "no AI message streamed");
});

test("a failing run streams an error event, then the stream closes", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.transfer, { input: { request: "" }, streamMode: "values" }));
  assert.equal(chunks[0].event, "metadata");
  const last = chunks.at(-1);
  assert.equal(last.event, "error");
  assert.equal(typeof last.data.error, "string");
  assert.match(last.data.message, /request is empty/);
  assert.equal((await c.threads.get(tid)).status, "error");
});

test("the retried demo node: the run streams through the retry to the review", async () => {
  const tid = await newThread();
  const chunks = await collect(c.runs.stream(tid, graphs.demo, { input: inputs[graphs.demo], streamMode: "updates" }));
  const nodes = chunks.filter((e) => e.event === "updates").map((e) => Object.keys(e.data)[0]);
  assert.deepEqual(nodes.filter((n) => n !== "__interrupt__").sort(), ["outline", "research", "write"]);
  assert.equal(nodes.at(-1), "__interrupt__");
  assert.ok(!chunks.some((e) => e.event === "error"), "a retried failure surfaced as an error event");
});

test("stateless stream and wait: the run is named by Content-Location /runs/{id}", async () => {
  let created;
  const chunks = await collect(c.runs.stream(null, graphs.transfer, { input: small, streamMode: "values", onRunCreated: (m) => (created = m) }));
  assert.equal(chunks[0].event, "metadata");
  assert.match(created.run_id, UUID);
  assert.equal(created.thread_id, undefined, "a stateless run's Content-Location names no thread");
  assert.equal(chunks.filter((e) => e.event === "values").at(-1).data.status, "executed");
  const out = await c.runs.wait(null, graphs.transfer, { input: small });
  assert.equal(out.status, "executed");
});
