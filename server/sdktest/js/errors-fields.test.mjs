// Errors across the areas: 422 with a detail naming the field, 404 for
// unknown ids, 409 for conflicts, never a status the SDK would retry.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";
import { apiUrl, client, graphs, raw, rejects } from "./lib.mjs";

const c = client();

async function post(path, body, contentType = "application/json") {
  return raw(path, { method: "POST", headers: { "content-type": contentType }, body: typeof body === "string" ? body : JSON.stringify(body) });
}

async function detail422(res, field) {
  assert.equal(res.status, 422, `want 422 naming ${field}, got ${res.status}: ${await res.clone().text()}`);
  const { detail } = await res.json();
  assert.match(detail, new RegExp(field), `the detail does not name ${field}: ${detail}`);
}

test("unknown thread, run, assistant and checkpoint are 404s the SDK does not retry", async () => {
  let calls = 0;
  const counting = new Client({
    apiUrl,
    callerOptions: { maxRetries: 3, fetch: (...a) => (calls++, fetch(...a)) },
  });
  await rejects(counting.threads.get(randomUUID()), 404);
  assert.equal(calls, 1, "the SDK retried a 404");
  const tid = (await c.threads.create()).thread_id;
  await rejects(c.runs.get(tid, randomUUID()), 404);
  await rejects(c.runs.join(tid, randomUUID()), 404);
  await rejects(c.runs.cancel(tid, randomUUID()), 404);
  await rejects(c.threads.getState(tid, randomUUID()), 404);
  await rejects(c.runs.wait(tid, "no-such-graph", { input: {} }), 404);
  await rejects(c.runs.create(tid, randomUUID(), { input: {} }), 404);
  await rejects(c.runs.wait(randomUUID(), graphs.transfer, { input: {} }), 404);
});

// Thread ids are what the Studio accepts (every UUID, and letters,
// digits, '.', '_', '-'), so its threads are API threads; anything else
// is a 422. Run ids are UUIDs.
test("a path id no thread or run can have is a 422 naming it", async () => {
  await detail422(await raw("/threads/not%20an%20id"), "thread_id");
  const tid = (await c.threads.create()).thread_id;
  await detail422(await raw(`/threads/${tid}/runs/not-a-uuid`), "run_id");
});

test("run-create bodies: each wrong field is a 422 naming it, and nothing is persisted", async () => {
  const tid = (await c.threads.create()).thread_id;
  const base = { assistant_id: graphs.transfer, input: { request: "Please send 20 to Bob Stone." } };
  const cases = [
    [{ ...base, stream_mode: ["values", "nonsense"] }, "stream_mode"],
    [{ ...base, multitask_strategy: "sometimes" }, "multitask_strategy"],
    [{ ...base, on_disconnect: "explode" }, "on_disconnect"],
    [{ ...base, if_not_exists: "maybe" }, "if_not_exists"],
    [{ ...base, after_seconds: -1 }, "after_seconds"],
    [{ ...base, durability: "forever" }, "durability"],
    [{ ...base, interrupt_before: 5 }, "interrupt_before"],
    [{ ...base, config: "recursion" }, "config"],
    [{ ...base, metadata: [1] }, "metadata"],
    [{ ...base, command: { resume: "x" } }, "command|input"],
    [{ input: {} }, "assistant_id"],
  ];
  for (const [body, field] of cases) {
    for (const route of ["runs", "runs/wait", "runs/stream"]) {
      await detail422(await post(`/threads/${tid}/${route}`, body), field);
    }
  }
  assert.deepEqual(await c.runs.list(tid), [], "a refused run was persisted");
});

test("bodies that are not JSON, or JSON of the wrong shape, are 422 naming the body or field", async () => {
  await detail422(await post("/threads", "{not json"), "body");
  await detail422(await post("/threads", "[]"), "body");
  await detail422(await post("/threads", { metadata: "x" }), "metadata");
  await detail422(await post("/threads", { if_exists: "sometimes" }), "if_exists");
  await detail422(await post("/threads/search", { limit: -3 }), "limit");
  await detail422(await post("/threads/search", { status: "sleeping" }), "status");
  await detail422(await post("/threads/search", { sort_by: "colour" }), "sort_by");
  const dup = await post("/threads", '{"metadata":{},"metadata":{"a":1}}');
  assert.equal(dup.status, 422, "a duplicate key must not silently win");
  // JSON as text/plain, as LangGraph Studio sends it, is accepted.
  const plain = await post("/threads", { metadata: { via: "text/plain" } }, "text/plain;charset=UTF-8");
  assert.equal(plain.status, 200);
  // Other content types are refused without a retry.
  const form = await post("/threads", "a=1", "application/x-www-form-urlencoded");
  assert.ok([415, 422].includes(form.status), `a form body answered ${form.status}`);
});

test("history and state bodies: wrong before, checkpoint or limit are 422", async () => {
  const tid = (await c.threads.create()).thread_id;
  await detail422(await post(`/threads/${tid}/history`, { limit: "ten" }), "limit");
  await detail422(await post(`/threads/${tid}/history`, { before: 5 }), "before");
  await detail422(await post(`/threads/${tid}/state/checkpoint`, { checkpoint: "x" }), "checkpoint");
  await detail422(await post(`/threads/${tid}/state`, { values: { a: 1 }, as_node: 7 }), "as_node");
});

test("a second run on a busy thread under reject is a 409, never a 5xx the SDK would retry", async () => {
  const tid = (await c.threads.create()).thread_id;
  const run = await c.runs.create(tid, graphs.transfer, { input: { request: "Please send 20 to Bob Stone." }, afterSeconds: 30 });
  const res = await post(`/threads/${tid}/runs`, { assistant_id: graphs.transfer, input: {}, multitask_strategy: "reject" });
  assert.equal(res.status, 409);
  await c.runs.cancel(tid, run.run_id, true);
});
