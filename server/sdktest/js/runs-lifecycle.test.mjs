// Runs as objects: wait (with __error__), background create and join,
// joinStream, list and get, cancel (interrupt, rollback), delete,
// if_not_exists, after_seconds.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, collect, events, graphs, inputs, raw, rejects, UUID } from "./lib.mjs";

const c = client();
const small = { request: "Please send 20 to Bob Stone for lunch." };

async function newThread() {
  return (await c.threads.create()).thread_id;
}

test("wait answers the final values and names the run", async () => {
  const tid = await newThread();
  let created;
  const out = await c.runs.wait(tid, graphs.transfer, { input: small, onRunCreated: (m) => (created = m) });
  assert.equal(out.status, "executed");
  assert.match(out.reference, /\S/);
  assert.equal(created.thread_id, tid);
  const run = await c.runs.get(tid, created.run_id);
  assert.equal(run.status, "success");
  assert.equal(run.thread_id, tid);
  assert.equal(run.assistant_id, (await c.assistants.get(graphs.transfer)).assistant_id);
});

test("wait on an interrupt answers the values with __interrupt__; the run is a success, the thread interrupted", async () => {
  const tid = await newThread();
  let created;
  const out = await c.runs.wait(tid, graphs.transfer, { input: inputs[graphs.transfer], onRunCreated: (m) => (created = m) });
  assert.equal(out.amount, 2500);
  assert.equal(out.__interrupt__?.[0]?.value?.amount, 2500, JSON.stringify(out));
  assert.equal((await c.threads.get(tid)).status, "interrupted");
  assert.equal((await c.runs.get(tid, created.run_id)).status, "success");
});

test("a run that fails: wait puts __error__ in a 200 body; the SDK throws it unless raiseError is false", async () => {
  const tid = await newThread();
  await assert.rejects(c.runs.wait(tid, graphs.transfer, { input: { request: "" } }), /request is empty/);
  const body = await c.runs.wait(tid, graphs.transfer, { input: { request: "" }, raiseError: false });
  assert.equal(typeof body.__error__.error, "string");
  assert.match(body.__error__.message, /request is empty/);
  const [latest] = await c.runs.list(tid, { limit: 1 });
  assert.equal(latest.status, "error");
  assert.equal((await c.threads.get(tid)).status, "error");
});

test("background create answers a pending Run; join waits for its values", async () => {
  const tid = await newThread();
  let created;
  const run = await c.runs.create(tid, graphs.transfer, { input: small, metadata: { who: "sdk" }, onRunCreated: (m) => (created = m) });
  assert.match(run.run_id, UUID);
  assert.equal(created.run_id, run.run_id);
  assert.equal(run.thread_id, tid);
  // The run as it stands when created: a quick one may have ended.
  assert.ok(["pending", "running", "success"].includes(run.status), run.status);
  assert.equal(run.metadata.who, "sdk");
  assert.ok(["reject", "interrupt", "rollback", "enqueue"].includes(run.multitask_strategy));
  const out = await c.runs.join(tid, run.run_id);
  assert.equal(out.status, "executed");
  assert.equal((await c.runs.get(tid, run.run_id)).status, "success");
  // Joining a finished run answers at once, the same values.
  assert.deepEqual(await c.runs.join(tid, run.run_id), out);
});

test("joinStream follows a background run to its end", async () => {
  const tid = await newThread();
  const run = await c.runs.create(tid, graphs.demo, { input: inputs[graphs.demo], streamMode: ["values", "updates"] });
  // The demo takes over half a second (a retried node, then a 300 ms one),
  // so the join starts while it runs and sees it interrupt.
  const chunks = await collect(c.runs.joinStream(tid, run.run_id, { streamMode: ["values", "updates"] }));
  assert.ok(events(chunks).includes("values"), events(chunks).join(","));
  const last = chunks.filter((e) => e.event === "values").at(-1).data;
  assert.ok("__interrupt__" in last, JSON.stringify(last));
  assert.equal((await c.threads.get(tid)).status, "interrupted");
  // A join after the end ends too (the runner's timeout fails it if not).
  await collect(c.runs.joinStream(tid, run.run_id));
});

test("list (newest first, paged, by status) and get; unknown ids 404", async () => {
  const tid = await newThread();
  const a = await c.runs.create(tid, graphs.transfer, { input: small });
  await c.runs.join(tid, a.run_id);
  const b = await c.runs.create(tid, graphs.transfer, { input: { request: "" } });
  await c.runs.join(tid, b.run_id);
  const list = await c.runs.list(tid);
  assert.deepEqual(list.map((r) => r.run_id), [b.run_id, a.run_id]);
  assert.deepEqual((await c.runs.list(tid, { limit: 1, offset: 1 })).map((r) => r.run_id), [a.run_id]);
  assert.deepEqual((await c.runs.list(tid, { status: "error" })).map((r) => r.run_id), [b.run_id]);
  const got = await c.runs.get(tid, a.run_id);
  for (const k of ["run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata", "multitask_strategy"]) {
    assert.ok(k in got, `Run lacks ${k}`);
  }
  await rejects(c.runs.get(tid, randomUUID()), 404);
  await rejects(c.runs.list(randomUUID()), 404);
  await rejects(c.runs.get(randomUUID(), a.run_id), 404);
});

// streamUntil streams a demo run and cancels it (action) once outline's
// update arrives: the run is mid-way, with research still retrying.
async function cancelMidway(tid, action) {
  let runId;
  const seen = [];
  for await (const e of c.runs.stream(tid, graphs.demo, { input: inputs[graphs.demo], streamMode: "updates", onDisconnect: "continue", onRunCreated: (m) => (runId = m.run_id) })) {
    seen.push(e);
    if (e.event === "updates" && "outline" in e.data) {
      assert.equal(await c.runs.cancel(tid, runId, true, action), undefined, "cancel with wait answers 204");
      break;
    }
  }
  return { runId, seen };
}

test("cancel with action interrupt: the run is interrupted, its finished steps stay", async () => {
  const tid = await newThread();
  const { runId } = await cancelMidway(tid, "interrupt");
  const run = await c.runs.get(tid, runId);
  assert.equal(run.status, "interrupted");
  const s = await c.threads.getState(tid);
  assert.ok(s.values.notes?.some((n) => n.startsWith("outline")), `outline's note kept: ${JSON.stringify(s.values)}`);
  assert.notEqual((await c.threads.get(tid)).status, "busy");
  // Cancelling a finished run is not an error the SDK would retry.
  const again = await raw(`/threads/${tid}/runs/${runId}/cancel?wait=0&action=interrupt`, { method: "POST" });
  assert.ok([202, 204, 409].includes(again.status), `cancel of a finished run answered ${again.status}`);
});

test("cancel with action rollback: the run and its checkpoints are gone", async () => {
  const tid = await newThread();
  const { runId } = await cancelMidway(tid, "rollback");
  await rejects(c.runs.get(tid, runId), 404);
  const history = await c.threads.getHistory(tid, { limit: 100 });
  assert.ok(history.every((s) => s.metadata.run_id !== runId), "a rolled-back run's checkpoints remain");
  assert.equal((await c.threads.get(tid)).status, "idle");
});

test("cancel without wait answers 202", async () => {
  const tid = await newThread();
  const run = await c.runs.create(tid, graphs.demo, { input: inputs[graphs.demo], afterSeconds: 30 });
  const res = await raw(`/threads/${tid}/runs/${run.run_id}/cancel?wait=0&action=interrupt`, { method: "POST" });
  assert.equal(res.status, 202);
  await c.runs.join(tid, run.run_id);
  assert.equal((await c.runs.get(tid, run.run_id)).status, "interrupted");
});

test("delete a finished run: 204, then 404", async () => {
  const tid = await newThread();
  const run = await c.runs.create(tid, graphs.transfer, { input: small });
  await c.runs.join(tid, run.run_id);
  assert.equal(await c.runs.delete(tid, run.run_id), undefined);
  await rejects(c.runs.get(tid, run.run_id), 404);
  await rejects(c.runs.delete(tid, run.run_id), 404);
});

test("if_not_exists: create makes the thread, the default is 404", async () => {
  const missing = randomUUID();
  await rejects(c.runs.wait(missing, graphs.transfer, { input: small }), 404);
  const out = await c.runs.wait(missing, graphs.transfer, { input: small, ifNotExists: "create" });
  assert.equal(out.status, "executed");
  const t = await c.threads.get(missing);
  assert.equal(t.metadata.graph_id, graphs.transfer);
  const other = randomUUID();
  await rejects(c.runs.create(other, graphs.transfer, { input: small, ifNotExists: "reject" }), 404);
});

test("after_seconds: the run stays pending until its time", async () => {
  const tid = await newThread();
  const started = Date.now();
  const run = await c.runs.create(tid, graphs.transfer, { input: small, afterSeconds: 1 });
  assert.equal(run.status, "pending");
  assert.equal((await c.runs.get(tid, run.run_id)).status, "pending");
  const out = await c.runs.join(tid, run.run_id);
  assert.equal(out.status, "executed");
  assert.ok(Date.now() - started >= 900, `ran after ${Date.now() - started} ms`);
});
