// Human in the loop: resume by value and by interrupt id, update and goto
// commands, forks from an earlier checkpoint, static breakpoints.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, graphs, inputs, rejects } from "./lib.mjs";

const c = client();
const small = { request: "Please send 20 to Bob Stone for lunch." };

async function interrupted() {
  const tid = (await c.threads.create()).thread_id;
  const out = await c.runs.wait(tid, graphs.transfer, { input: inputs[graphs.transfer] });
  assert.equal(out.__interrupt__?.length, 1, JSON.stringify(out));
  return { tid, interrupt: out.__interrupt__[0] };
}

test("resume by value", async () => {
  const { tid } = await interrupted();
  const out = await c.runs.wait(tid, graphs.transfer, { command: { resume: "approve" } });
  assert.equal(out.decision, "approved");
  assert.equal(out.status, "executed");
  assert.equal(out.amount, 2500);
  const t = await c.threads.get(tid);
  assert.equal(t.status, "idle");
  assert.deepEqual(t.interrupts, {});
});

test("resume by interrupt id; a refused answer asks again with a new interrupt", async () => {
  const { tid, interrupt } = await interrupted();
  const again = await c.runs.wait(tid, graphs.transfer, { command: { resume: { [interrupt.id]: { action: "edit", amount: -5 } } } });
  const second = again.__interrupt__?.[0];
  assert.ok(second, `a refused answer did not ask again: ${JSON.stringify(again)}`);
  assert.match(second.value.problem, /\S/);
  assert.ok(second.value.errors?.amount, JSON.stringify(second.value));
  const s = await c.threads.getState(tid);
  assert.equal(s.tasks[0].interrupts[0].id, second.id);

  const out = await c.runs.wait(tid, graphs.transfer, { command: { resume: { [second.id]: { action: "edit", amount: 800 } } } });
  assert.equal(out.decision, "approved");
  assert.equal(out.amount, 800);
  assert.equal(out.status, "executed");
});

test("resume with an id that is not pending is refused (422), the thread stays interrupted", async () => {
  const { tid } = await interrupted();
  // A map whose keys are all interrupt ids (32 hex digits, as upstream
  // tells a by-id map from a value) answers by id: one that is not
  // pending is refused.
  const notPending = "0".repeat(32);
  const body = await rejects(c.runs.wait(tid, graphs.transfer, { command: { resume: { [notPending]: "approve" } } }), 422);
  assert.match(body.detail, new RegExp(notPending));
  assert.equal((await c.threads.get(tid)).status, "interrupted");
});

test("resume inside a subgraph: the research review, then the summary", async () => {
  const tid = (await c.threads.create()).thread_id;
  const first = await c.runs.wait(tid, graphs.research, { input: inputs[graphs.research] });
  assert.match(first.__interrupt__[0].value.question, /findings/);
  const out = await c.runs.wait(tid, graphs.research, { command: { resume: "yes" } });
  assert.match(out.answer, /\S/);
  assert.ok(out.sources.length > 0, JSON.stringify(out));
  assert.equal((await c.threads.get(tid)).status, "idle");
});

test("command update and goto: write state and jump to a node", async () => {
  const tid = (await c.threads.create()).thread_id;
  await c.runs.wait(tid, graphs.transfer, { input: small });
  const out = await c.runs.wait(tid, graphs.transfer, { command: { update: { reason: "duplicate" }, goto: "reject" } });
  assert.equal(out.status, "rejected");
  assert.equal(out.reason, "duplicate");
  const [latest] = await c.threads.getHistory(tid, { limit: 1 });
  assert.deepEqual(latest.next, []);
  await rejects(c.runs.wait(tid, graphs.transfer, { command: { goto: "no_such_node" } }), 422);
  await rejects(c.runs.wait(tid, graphs.transfer, { input: small, command: { resume: "x" } }), 422);
});

test("a run from an earlier checkpoint forks a branch; the old head stays", async () => {
  const { tid } = await interrupted();
  const history = await c.threads.getHistory(tid, { limit: 100 });
  const oldHead = history[0];
  const beforeExtract = history.find((s) => s.next.length === 1 && s.next[0] === "extract");
  assert.ok(beforeExtract, `no checkpoint before extract in ${JSON.stringify(history.map((s) => s.next))}`);

  // input null replays the pending tasks of the chosen checkpoint.
  const replay = await c.runs.wait(tid, graphs.transfer, { input: null, checkpointId: beforeExtract.checkpoint.checkpoint_id });
  assert.equal(replay.__interrupt__?.[0]?.value.amount, 2500);
  const head = await c.threads.getState(tid);
  assert.notEqual(head.checkpoint.checkpoint_id, oldHead.checkpoint.checkpoint_id);
  const after = await c.threads.getHistory(tid, { limit: 100 });
  const byId = new Map(after.map((s) => [s.checkpoint.checkpoint_id, s]));
  const ancestors = [];
  for (let s = head; s?.parent_checkpoint; s = byId.get(s.parent_checkpoint.checkpoint_id)) ancestors.push(s.parent_checkpoint.checkpoint_id);
  assert.ok(ancestors.includes(beforeExtract.checkpoint.checkpoint_id), "the new head does not descend from the chosen checkpoint");
  assert.ok(!ancestors.includes(oldHead.checkpoint.checkpoint_id), "the new branch went through the old head");
  assert.deepEqual((await c.threads.getState(tid, oldHead.checkpoint.checkpoint_id)).values, oldHead.values, "the old branch is kept");

  // New input on the first checkpoint, given as a checkpoint object.
  const first = after.at(-1);
  const fresh = await c.runs.wait(tid, graphs.transfer, {
    input: small,
    checkpoint: { checkpoint_id: first.checkpoint.checkpoint_id, checkpoint_ns: "" },
  });
  assert.equal(fresh.status, "executed");
  assert.equal(fresh.amount, 20);
});

test("interrupt_before and interrupt_after stop the run there; null input continues", async () => {
  const tid = (await c.threads.create()).thread_id;
  let created;
  await c.runs.wait(tid, graphs.transfer, { input: small, interruptBefore: ["execute"], onRunCreated: (m) => (created = m) });
  let s = await c.threads.getState(tid);
  assert.deepEqual(s.next, ["execute"]);
  assert.deepEqual(s.tasks[0].interrupts, [], "a static breakpoint has no interrupt value");
  // A state key nothing wrote yet has no value, as upstream's TypedDict
  // state leaves it out.
  assert.equal(s.values.status ?? "", "");
  assert.equal((await c.threads.get(tid)).status, "interrupted");
  assert.equal((await c.runs.get(tid, created.run_id)).status, "success");
  const done = await c.runs.wait(tid, graphs.transfer, { input: null });
  assert.equal(done.status, "executed");

  const t2 = (await c.threads.create()).thread_id;
  const mid = await c.runs.wait(t2, graphs.transfer, { input: small, interruptAfter: ["extract"] });
  assert.equal(mid.amount, 20);
  s = await c.threads.getState(t2);
  assert.deepEqual(s.next, ["risk_check"]);
  assert.equal((await c.runs.wait(t2, graphs.transfer, { input: null })).status, "executed");

  const t3 = (await c.threads.create()).thread_id;
  await c.runs.wait(t3, graphs.transfer, { input: small, interruptBefore: "*" });
  assert.deepEqual((await c.threads.getState(t3)).next, ["extract"], "* stops before the first node");
  await rejects(c.runs.wait(t3, graphs.transfer, { input: small, interruptBefore: ["no_such_node"] }), 422);
});
