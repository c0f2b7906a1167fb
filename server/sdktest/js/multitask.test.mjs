// multitask_strategy: what a second run on a busy thread does to the first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, graphs, inputs, rejects } from "./lib.mjs";

const c = client();
const small = { request: "Please send 20 to Bob Stone for lunch." };

async function newThread() {
  return (await c.threads.create()).thread_id;
}

// runningDemo starts a demo-review run in the background and returns once
// its outline node has finished (research is still retrying, then write
// takes 300 ms): a run with completed work, still running. The stream is
// resumable and joined from its first event, so outline's update is seen
// however early it came.
async function runningDemo(tid) {
  const run = await c.runs.create(tid, graphs.demo, { input: inputs[graphs.demo], streamMode: ["updates"], streamResumable: true });
  for await (const e of c.runs.joinStream(tid, run.run_id, { streamMode: ["updates"], lastEventId: "-1" })) {
    if (e.event === "updates" && "outline" in e.data) break;
  }
  return run;
}

test("reject: a second run on a busy thread is a 409 the SDK does not retry; the first goes on", async () => {
  const tid = await newThread();
  const first = await c.runs.create(tid, graphs.transfer, { input: small, afterSeconds: 30 });
  const body = await rejects(c.runs.create(tid, graphs.transfer, { input: small, multitaskStrategy: "reject" }), 409);
  assert.match(body.detail, /busy|pending|running|reject/i);
  await rejects(c.runs.wait(tid, graphs.transfer, { input: small, multitaskStrategy: "reject" }), 409);
  assert.equal((await c.runs.list(tid)).length, 1, "a rejected run was persisted");
  assert.equal((await c.runs.get(tid, first.run_id)).status, "pending");
  await c.runs.cancel(tid, first.run_id, true);
});

test("interrupt: the first run is interrupted, its finished steps kept, the second runs", async () => {
  const tid = await newThread();
  const first = await runningDemo(tid);
  // A thread runs one graph for life (Superstep refuses another graph's
  // run on it with a 409), so the second run is the demo's too.
  const second = await c.runs.create(tid, graphs.demo, { input: inputs[graphs.demo], multitaskStrategy: "interrupt" });
  const out = await c.runs.join(tid, second.run_id);
  assert.ok("__interrupt__" in out, "the second run did not reach the review: " + JSON.stringify(out));
  assert.equal((await c.runs.get(tid, second.run_id)).status, "success");
  assert.equal((await c.runs.get(tid, first.run_id)).status, "interrupted");
  const history = await c.threads.getHistory(tid, { limit: 100 });
  assert.ok(history.some((s) => s.metadata.run_id === first.run_id), "the interrupted run's checkpoints were dropped");
});

test("rollback: the first run is deleted with its checkpoints, the second runs", async () => {
  const tid = await newThread();
  const first = await runningDemo(tid);
  const second = await c.runs.create(tid, graphs.demo, { input: inputs[graphs.demo], multitaskStrategy: "rollback" });
  assert.ok("__interrupt__" in (await c.runs.join(tid, second.run_id)), "the second run did not reach the review");
  await rejects(c.runs.get(tid, first.run_id), 404);
  const history = await c.threads.getHistory(tid, { limit: 100 });
  assert.ok(history.every((s) => s.metadata.run_id !== first.run_id), "the rolled-back run's checkpoints remain");
  assert.deepEqual((await c.runs.list(tid)).map((r) => r.run_id), [second.run_id]);
});

test("enqueue: the second run waits for the first, then runs on its result", async () => {
  const tid = await newThread();
  const first = await c.runs.create(tid, graphs.transfer, { input: small, afterSeconds: 1 });
  const second = await c.runs.create(tid, graphs.transfer, {
    input: { request: "Please send 30 to Carol King." },
    multitaskStrategy: "enqueue",
  });
  assert.equal(second.status, "pending");
  const out = await c.runs.join(tid, second.run_id);
  assert.equal(out.amount, 30);
  const a = await c.runs.get(tid, first.run_id);
  const b = await c.runs.get(tid, second.run_id);
  assert.equal(a.status, "success");
  assert.equal(b.status, "success");
  const history = await c.threads.getHistory(tid, { limit: 100 });
  const lastOfA = Math.max(...history.filter((s) => s.metadata.run_id === a.run_id).map((s) => s.metadata.step));
  const firstOfB = Math.min(...history.filter((s) => s.metadata.run_id === b.run_id).map((s) => s.metadata.step));
  assert.ok(firstOfB > lastOfA, "the enqueued run did not start after the first ended");
});

test("another graph's run on a thread is refused with a 409 naming both graphs", async () => {
  const tid = await newThread();
  await c.runs.wait(tid, graphs.transfer, { input: small });
  const body = await rejects(c.runs.create(tid, graphs.demo, { input: inputs[graphs.demo] }), 409);
  assert.match(body.detail, new RegExp(graphs.transfer));
  assert.match(body.detail, new RegExp(graphs.demo));
});

test("the default strategy is enqueue", async () => {
  const tid = await newThread();
  const first = await c.runs.create(tid, graphs.transfer, { input: small, afterSeconds: 1 });
  const second = await c.runs.create(tid, graphs.transfer, { input: small });
  assert.equal(second.multitask_strategy, "enqueue");
  await c.runs.join(tid, second.run_id);
  assert.equal((await c.runs.get(tid, first.run_id)).status, "success");
});
