// Threads: CRUD, search and count, copy; state (latest, at a checkpoint id,
// at a checkpoint object, with subgraphs); update state; history.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, graphs, inputs, raw, rejects, unique, UUID } from "./lib.mjs";

const c = client();

// interruptedTransfer runs transfer-approval to its risk check (2,500 is
// over the 1,000 limit) and returns the thread id.
async function interruptedTransfer() {
  const t = await c.threads.create({ graphId: graphs.transfer });
  await c.runs.wait(t.thread_id, graphs.transfer, { input: inputs[graphs.transfer] });
  return t.thread_id;
}

test("create, if_exists, get, patch metadata (merged), delete", async () => {
  const id = randomUUID();
  const tag = unique("tag");
  const t = await c.threads.create({ threadId: id, metadata: { tag, n: 1 }, graphId: graphs.transfer });
  assert.equal(t.thread_id, id);
  assert.equal(t.status, "idle");
  assert.equal(t.metadata.tag, tag);
  assert.equal(t.metadata.graph_id, graphs.transfer, "graphId becomes metadata.graph_id");
  for (const k of ["created_at", "updated_at"]) assert.ok(!Number.isNaN(Date.parse(t[k])), `${k}: ${t[k]}`);

  const again = await c.threads.create({ threadId: id, ifExists: "do_nothing", metadata: { other: true } });
  assert.equal(again.thread_id, id);
  assert.equal(again.metadata.other, undefined, "do_nothing changed the existing thread");
  await rejects(c.threads.create({ threadId: id, ifExists: "raise" }), 409);

  const patched = await c.threads.update(id, { metadata: { n: 2, extra: "x" } });
  assert.deepEqual([patched.metadata.tag, patched.metadata.n, patched.metadata.extra], [tag, 2, "x"]);
  assert.deepEqual((await c.threads.get(id)).metadata, patched.metadata);

  assert.equal(await c.threads.delete(id), undefined, "delete answers 204");
  await rejects(c.threads.get(id), 404);
  await rejects(c.threads.update(id, { metadata: {} }), 404);
});

test("a new thread's state is empty", async () => {
  const t = await c.threads.create();
  const s = await c.threads.getState(t.thread_id);
  assert.deepEqual(s.values, {});
  assert.deepEqual(s.next, []);
  assert.deepEqual(s.tasks, []);
});

test("search and count by metadata, status and ids, with pagination", async () => {
  const batch = unique("batch");
  const made = [];
  for (let i = 0; i < 5; i++) made.push((await c.threads.create({ metadata: { batch, i } })).thread_id);
  const interrupted = await interruptedTransfer();
  await c.threads.update(interrupted, { metadata: { batch } });

  const all = await c.threads.search({ metadata: { batch }, limit: 100 });
  assert.deepEqual(all.map((t) => t.thread_id).sort(), [...made, interrupted].sort());
  assert.deepEqual(all.map((t) => t.thread_id), [interrupted, ...made.slice().reverse()], "default order: created_at, newest first");

  const one = await c.threads.search({ metadata: { batch, i: 3 } });
  assert.deepEqual(one.map((t) => t.thread_id), [made[3]]);
  const byStatus = await c.threads.search({ metadata: { batch }, status: "interrupted" });
  assert.deepEqual(byStatus.map((t) => t.thread_id), [interrupted]);
  const byIds = await c.threads.search({ ids: [made[0], made[4]] });
  assert.deepEqual(byIds.map((t) => t.thread_id).sort(), [made[0], made[4]].sort());
  const byValues = await c.threads.search({ values: { recipient: "Alice Martin" }, metadata: { batch } });
  assert.deepEqual(byValues.map((t) => t.thread_id), [interrupted]);

  const p1 = await c.threads.search({ metadata: { batch }, limit: 4, offset: 0, sortBy: "created_at", sortOrder: "asc" });
  const p2 = await c.threads.search({ metadata: { batch }, limit: 4, offset: 4, sortBy: "created_at", sortOrder: "asc" });
  assert.deepEqual([...p1, ...p2].map((t) => t.thread_id), [...made, interrupted]);

  const res = await raw("/threads/search", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ metadata: { batch }, limit: 4 }) });
  assert.equal(res.headers.get("x-pagination-next"), "4");
  assert.equal(res.headers.get("x-pagination-total"), "6");

  assert.equal(await c.threads.count({ metadata: { batch } }), 6);
  assert.equal(await c.threads.count({ metadata: { batch }, status: "idle" }), 5);
  assert.equal(await c.threads.count({ metadata: { batch: unique("none") } }), 0);
});

test("an interrupted thread: status, values, interrupts by task", async () => {
  const id = await interruptedTransfer();
  const t = await c.threads.get(id);
  assert.equal(t.status, "interrupted");
  assert.equal(t.values.amount, 2500);
  assert.equal(t.values.recipient, "Alice Martin");
  assert.equal(t.metadata.graph_id, graphs.transfer, "a run sets metadata.graph_id");
  assert.match(t.metadata.assistant_id, UUID);
  const tasks = Object.entries(t.interrupts);
  assert.equal(tasks.length, 1, JSON.stringify(t.interrupts));
  const [[, list]] = tasks;
  assert.equal(list[0].value.amount, 2500);
  assert.equal(list[0].value.limit, 1000);
  assert.equal(typeof list[0].id, "string");
});

test("state: latest, at a checkpoint id, at a checkpoint object", async () => {
  const id = await interruptedTransfer();
  const s = await c.threads.getState(id);
  assert.deepEqual(s.next, ["risk_check"]);
  assert.equal(s.tasks.length, 1);
  assert.equal(s.tasks[0].name, "risk_check");
  assert.equal(s.tasks[0].interrupts[0].value.recipient, "Alice Martin");
  assert.equal(s.checkpoint.thread_id, id);
  assert.equal(s.checkpoint.checkpoint_ns, "");
  assert.match(s.checkpoint.checkpoint_id, UUID);
  assert.ok(s.parent_checkpoint?.checkpoint_id, "the latest checkpoint has a parent");
  assert.equal(typeof s.metadata.step, "number");

  const atId = await c.threads.getState(id, s.checkpoint.checkpoint_id);
  assert.deepEqual(atId.checkpoint, s.checkpoint);
  assert.deepEqual(atId.values, s.values);
  const atObj = await c.threads.getState(id, { checkpoint_id: s.checkpoint.checkpoint_id, checkpoint_ns: "" });
  assert.deepEqual(atObj.values, s.values);

  const parent = await c.threads.getState(id, s.parent_checkpoint.checkpoint_id);
  assert.notDeepEqual(parent.values, s.values, "the parent checkpoint is an older state");
  await rejects(c.threads.getState(id, randomUUID()), 404);
  await rejects(c.threads.getState(randomUUID()), 404);
});

test("state with subgraphs: the research subgraph's own state under its task", async () => {
  const t = await c.threads.create();
  await c.runs.wait(t.thread_id, graphs.research, { input: inputs[graphs.research] });
  const flat = await c.threads.getState(t.thread_id);
  assert.deepEqual(flat.next, ["research"]);
  const task = flat.tasks[0];
  assert.equal(task.name, "research");
  assert.equal(task.state ?? null, null, "without subgraphs the task has no nested state");
  assert.ok(task.checkpoint?.checkpoint_ns?.startsWith("research:"), `pending subgraph checkpoint: ${JSON.stringify(task.checkpoint)}`);
  assert.ok(task.interrupts.length === 1 && /findings/.test(task.interrupts[0].value.question), JSON.stringify(task.interrupts));

  const deep = await c.threads.getState(t.thread_id, undefined, { subgraphs: true });
  const sub = deep.tasks[0].state;
  assert.ok(sub, "subgraphs=true gives the task's state");
  assert.deepEqual(sub.next, ["review"]);
  assert.ok(Array.isArray(sub.values.findings) && sub.values.findings.length > 0, "the subgraph's own keys (findings) show");
  assert.ok(sub.checkpoint.checkpoint_ns.startsWith("research:"));

  const viaObj = await c.threads.getState(t.thread_id, { checkpoint_id: deep.checkpoint.checkpoint_id, checkpoint_ns: "" }, { subgraphs: true });
  assert.deepEqual(viaObj.tasks[0].state.next, ["review"]);
});

test("update state as a node, then continue from it", async () => {
  const id = await interruptedTransfer();
  const before = await c.threads.getState(id);
  // As if extract had read 500: the risk check runs again and passes.
  const { checkpoint } = await c.threads.updateState(id, { values: { amount: 500 }, asNode: "extract" });
  assert.equal(checkpoint.thread_id, id);
  assert.notEqual(checkpoint.checkpoint_id, before.checkpoint.checkpoint_id);
  const after = await c.threads.getState(id);
  assert.equal(after.values.amount, 500);
  assert.deepEqual(after.next, ["risk_check"]);
  assert.equal(after.metadata.source, "update");
  assert.equal(after.parent_checkpoint.checkpoint_id, before.checkpoint.checkpoint_id);

  const out = await c.runs.wait(id, graphs.transfer, { input: null });
  assert.equal(out.decision, "auto-approved");
  assert.equal(out.status, "executed");
  assert.equal((await c.threads.get(id)).status, "idle");

  await rejects(c.threads.updateState(id, { values: { amount: 1 }, asNode: "no_such_node" }), 422);
  await rejects(c.threads.updateState(randomUUID(), { values: { amount: 1 } }), 404);
});

test("__copy__ forks a checkpoint as a sibling (Studio's re-run from here)", async () => {
  const id = await interruptedTransfer();
  const history = await c.threads.getHistory(id);
  const older = history[1];
  const { checkpoint } = await c.threads.updateState(id, { values: null, asNode: "__copy__", checkpointId: older.checkpoint.checkpoint_id });
  const fork = await c.threads.getState(id, checkpoint.checkpoint_id);
  assert.equal(fork.metadata.source, "fork");
  assert.deepEqual(fork.values, older.values, "a copy keeps the values");
  assert.deepEqual(fork.next, older.next, "a copy keeps the pending tasks");
  assert.equal(fork.parent_checkpoint?.checkpoint_id, older.parent_checkpoint?.checkpoint_id, "a copy is a sibling of the checkpoint it copies");
  assert.equal((await c.threads.getState(id)).checkpoint.checkpoint_id, checkpoint.checkpoint_id, "the fork is the thread's head");
});

test("history: newest first, parents chained, limit, three before shapes, metadata filter", async () => {
  const id = await interruptedTransfer();
  const h = await c.threads.getHistory(id, { limit: 100 });
  assert.ok(h.length >= 3, `only ${h.length} checkpoints`);
  for (let i = 0; i + 1 < h.length; i++) {
    assert.ok(h[i].metadata.step > h[i + 1].metadata.step, "not newest first");
    assert.equal(h[i].parent_checkpoint.checkpoint_id, h[i + 1].checkpoint.checkpoint_id, "parent_checkpoint does not chain");
  }
  assert.equal(h.at(-1).parent_checkpoint, null, "the first checkpoint has no parent");
  assert.equal(h.at(-1).metadata.source, "input");
  assert.deepEqual(h[0].checkpoint, (await c.threads.getState(id)).checkpoint);

  assert.deepEqual(await c.threads.getHistory(id, { limit: 2 }), h.slice(0, 2));
  const pivot = h[1].checkpoint.checkpoint_id;
  const want = h.slice(2).map((s) => s.checkpoint.checkpoint_id);
  for (const before of [pivot, { checkpoint_id: pivot, checkpoint_ns: "" }, { configurable: { checkpoint_id: pivot } }]) {
    const older = await c.threads.getHistory(id, { limit: 100, before });
    assert.deepEqual(older.map((s) => s.checkpoint.checkpoint_id), want, `before as ${JSON.stringify(before)}`);
  }
  const inputs = await c.threads.getHistory(id, { metadata: { source: "input" } });
  assert.ok(inputs.length >= 1 && inputs.every((s) => s.metadata.source === "input"));
  const loops = await c.threads.getHistory(id, { metadata: { source: "loop" } });
  assert.ok(loops.length >= 1 && loops.every((s) => s.metadata.source === "loop"));
  assert.equal(inputs.length + loops.length, h.length);

  // The GET variant takes a string before.
  const res = await raw(`/threads/${id}/history?limit=1&before=${pivot}`);
  assert.equal(res.status, 200);
  assert.deepEqual((await res.json()).map((s) => s.checkpoint.checkpoint_id), want.slice(0, 1));
  await rejects(c.threads.getHistory(randomUUID()), 404);
});

test("copy: a new thread with the same state and history", async () => {
  const id = await interruptedTransfer();
  const copy = await c.threads.copy(id);
  assert.notEqual(copy.thread_id, id);
  const [a, b] = [await c.threads.getState(id), await c.threads.getState(copy.thread_id)];
  assert.deepEqual(b.values, a.values);
  assert.deepEqual(b.next, a.next);
  assert.equal(b.checkpoint.thread_id, copy.thread_id);
  assert.equal((await c.threads.getHistory(copy.thread_id, { limit: 100 })).length, (await c.threads.getHistory(id, { limit: 100 })).length);
  // The copy answers on its own: resuming it leaves the original alone.
  await c.runs.wait(copy.thread_id, graphs.transfer, { command: { resume: "reject" } });
  assert.equal((await c.threads.get(copy.thread_id)).values.status, "rejected");
  assert.equal((await c.threads.get(id)).status, "interrupted");
  await rejects(c.threads.copy(randomUUID()), 404);
});

test("patch the latest checkpoint's metadata", async () => {
  const id = await interruptedTransfer();
  await c.threads.patchState(id, { reviewed_by: "ana" });
  const s = await c.threads.getState(id);
  assert.equal(s.metadata.reviewed_by, "ana");
  assert.equal(typeof s.metadata.step, "number", "patching keeps the other metadata");
});
