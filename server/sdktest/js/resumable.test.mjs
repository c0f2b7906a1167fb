// stream_resumable: the proxy cuts the TCP connection mid-stream; the SDK
// reconnects to the Location with Last-Event-ID and every event arrives
// exactly once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { apiUrl, client, collect, DROP_HEADER, graphs, inputs, raw, unique } from "./lib.mjs";

const modes = ["values", "updates"];

// cutTokens asks the proxy which drop tokens it has cut.
async function cutTokens() {
  const res = await fetch(apiUrl + "/__sdktest/drops");
  return (await res.json()).cut;
}

const key = (e) => `${e.id}|${e.event}|${JSON.stringify(e.data)}`;

test("a dropped resumable stream reconnects and delivers every event exactly once", async () => {
  const c = client();
  const token = unique("drop");
  const cutting = client({ defaultHeaders: { [DROP_HEADER]: `${token}:3` } });
  const tid = (await c.threads.create()).thread_id;
  let runId;
  const got = await collect(
    cutting.runs.stream(tid, graphs.demo, {
      input: inputs[graphs.demo],
      streamMode: modes,
      streamResumable: true,
      onDisconnect: "continue",
      onRunCreated: (m) => (runId = m.run_id),
    }),
  );
  assert.deepEqual(await cutTokens().then((t) => t.filter((x) => x === token)), [token], "the proxy never cut the stream: " + JSON.stringify(got.map((e) => [e.id, e.event])));
  assert.equal(got[0].event, "metadata");
  const ids = got.map((e) => e.id);
  assert.ok(ids.every((id) => id != null), "a resumable stream's events all carry ids");
  assert.equal(new Set(ids).size, ids.length, `an event came twice: ${ids}`);

  // The whole stream, replayed from the start, is what arrived: nothing
  // lost at the cut, nothing repeated.
  const all = await collect(c.runs.joinStream(tid, runId, { lastEventId: "-1", streamMode: modes }));
  assert.deepEqual(got.map(key), all.map(key));
  assert.ok(all.length > 3, `the run streamed only ${all.length} events: the cut was at its end`);
  const values = got.filter((e) => e.event === "values");
  assert.ok("__interrupt__" in values.at(-1).data, "the stream did not reach the review's interrupt");
  assert.equal((await c.runs.get(tid, runId)).status, "success");
});

test("joinStream with a Last-Event-ID replays only what came after it", async () => {
  const c = client();
  const tid = (await c.threads.create()).thread_id;
  let runId;
  const first = await collect(
    c.runs.stream(tid, graphs.transfer, {
      input: { request: "Please send 20 to Bob Stone for lunch." },
      streamMode: modes,
      streamResumable: true,
      onRunCreated: (m) => (runId = m.run_id),
    }),
  );
  const cut = first[2].id;
  const rest = await collect(c.runs.joinStream(tid, runId, { lastEventId: cut, streamMode: modes }));
  assert.deepEqual(rest.map(key), first.slice(3).map(key));
});

test("a resumable stream's response says where to reconnect", async () => {
  const c = client();
  const tid = (await c.threads.create()).thread_id;
  const res = await raw(`/threads/${tid}/runs/stream`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ assistant_id: graphs.transfer, input: { request: "Please send 20 to Bob Stone." }, stream_resumable: true, stream_mode: ["values"] }),
  });
  assert.equal(res.status, 200);
  const loc = res.headers.get("location");
  const cl = res.headers.get("content-location");
  assert.match(loc, new RegExp(`^/threads/${tid}/runs/[0-9a-f-]{36}/stream$`));
  assert.equal(loc, `${cl}/stream`);
  await res.text();
});
