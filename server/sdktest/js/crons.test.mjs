// Crons: scheduled runs made, listed, counted, changed and deleted
// through the SDK. Their schedules are far off (New Year's midnight) so
// none fires while the scenarios run; firing is tested in Go with a
// clock the test moves (server/crons_test.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { client, graphs, inputs, rejects, unique, UUID } from "./lib.mjs";

const c = client();
const yearly = "0 0 1 1 *";

test("createForThread: the Cron as the SDK types it, found by thread and counted", async () => {
  const thread = await c.threads.create();
  const cron = await c.crons.createForThread(thread.thread_id, graphs.lowLevel, {
    schedule: yearly,
    input: inputs[graphs.lowLevel],
    metadata: { owner: unique("ops") },
    multitaskStrategy: "enqueue",
  });
  assert.match(cron.cron_id, UUID);
  assert.match(cron.assistant_id, UUID);
  assert.equal(cron.thread_id, thread.thread_id);
  assert.equal(cron.schedule, yearly);
  assert.equal(cron.end_time, null);
  assert.equal(cron.enabled, true);
  assert.equal(cron.user_id, null);
  assert.deepEqual(cron.payload.input, inputs[graphs.lowLevel]);
  assert.equal(cron.payload.multitask_strategy, "enqueue");
  const next = new Date(cron.next_run_date);
  assert.equal(next.getUTCMonth(), 0);
  assert.equal(next.getUTCDate(), 1);
  assert.ok(next > new Date(), `next run ${cron.next_run_date} is not ahead`);
  assert.ok(!Number.isNaN(Date.parse(cron.created_at)));
  assert.ok(!Number.isNaN(Date.parse(cron.updated_at)));

  const found = await c.crons.search({ threadId: thread.thread_id });
  assert.deepEqual(found.map((x) => x.cron_id), [cron.cron_id]);
  assert.equal(await c.crons.count({ threadId: thread.thread_id }), 1);

  await c.crons.delete(cron.cron_id);
  assert.equal(await c.crons.count({ threadId: thread.thread_id }), 0);
  await rejects(c.crons.delete(cron.cron_id), 404);
});

test("create (stateless), update, search by assistant with pages and select, delete", async () => {
  const asst = await c.assistants.create({ graphId: graphs.lowLevel, name: unique("cron-owner") });
  const made = [];
  for (let i = 0; i < 3; i++) {
    made.push(
      await c.crons.create(asst.assistant_id, {
        schedule: `${i} 0 1 1 *`,
        input: inputs[graphs.lowLevel],
        onRunCompleted: i === 0 ? "keep" : undefined,
      }),
    );
  }
  assert.equal(made[0].thread_id, null);
  assert.equal(made[0].on_run_completed, "keep");
  assert.equal(made[1].on_run_completed, "delete");
  assert.equal(await c.crons.count({ assistantId: asst.assistant_id }), 3);

  const page = await c.crons.search({ assistantId: asst.assistant_id, sortBy: "next_run_date", sortOrder: "asc", limit: 2 });
  assert.deepEqual(page.map((x) => x.cron_id), made.slice(0, 2).map((x) => x.cron_id));
  const rest = await c.crons.search({ assistantId: asst.assistant_id, sortBy: "next_run_date", sortOrder: "asc", limit: 2, offset: 2 });
  assert.deepEqual(rest.map((x) => x.cron_id), [made[2].cron_id]);
  const slim = await c.crons.search({ assistantId: asst.assistant_id, select: ["cron_id", "schedule"], limit: 1 });
  assert.deepEqual(Object.keys(slim[0]).sort(), ["cron_id", "schedule"]);

  const updated = await c.crons.update(made[0].cron_id, { schedule: "30 12 1 1 *", enabled: false, metadata: { note: "paused" } });
  assert.equal(updated.schedule, "30 12 1 1 *");
  assert.equal(updated.enabled, false);
  assert.equal(updated.metadata.note, "paused");
  assert.equal(new Date(updated.next_run_date).getUTCHours(), 12);
  const disabled = await c.crons.search({ assistantId: asst.assistant_id, enabled: false });
  assert.deepEqual(disabled.map((x) => x.cron_id), [made[0].cron_id]);

  for (const x of made) await c.crons.delete(x.cron_id);
  assert.equal(await c.crons.count({ assistantId: asst.assistant_id }), 0);
});

test("refusals: a bad schedule is 422 naming the field, an unknown assistant or thread 404", async () => {
  const thread = await c.threads.create();
  const bad = await rejects(c.crons.createForThread(thread.thread_id, graphs.lowLevel, { schedule: "every day", input: {} }), 422);
  assert.match(JSON.stringify(bad), /schedule/);
  await rejects(c.crons.create(randomUUID(), { schedule: yearly, input: {} }), 404);
  await rejects(c.crons.createForThread(randomUUID(), graphs.lowLevel, { schedule: yearly, input: {} }), 404);
  await rejects(c.crons.update(randomUUID(), { enabled: true }), 404);
});

test("deleting a thread deletes its crons", async () => {
  const thread = await c.threads.create();
  await c.crons.createForThread(thread.thread_id, graphs.lowLevel, { schedule: yearly, input: inputs[graphs.lowLevel] });
  assert.equal(await c.crons.count({ threadId: thread.thread_id }), 1);
  await c.threads.delete(thread.thread_id);
  assert.equal(await c.crons.count({ threadId: thread.thread_id }), 0);
});

test("deleting an assistant deletes its crons", async () => {
  const asst = await c.assistants.create({ graphId: graphs.lowLevel, name: unique("doomed") });
  await c.crons.create(asst.assistant_id, { schedule: yearly, input: inputs[graphs.lowLevel] });
  assert.equal(await c.crons.count({ assistantId: asst.assistant_id }), 1);
  await c.assistants.delete(asst.assistant_id);
  assert.equal(await c.crons.count({ assistantId: asst.assistant_id }), 0);
});
