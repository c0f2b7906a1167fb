// /ok and /info: what a load balancer and LangGraph Studio ask first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { apiUrl, backend, raw } from "./lib.mjs";

test("GET /ok answers {ok: true}, without the API key too (a load balancer's probe)", async () => {
  for (const headers of [{}, { "x-api-key": "" }]) {
    const res = await fetch(apiUrl + "/ok", { headers });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^application\/json/);
    assert.deepEqual(await res.json(), { ok: true });
  }
});

test("GET /info reports a version and the flags Studio reads", async () => {
  const res = await raw("/info");
  assert.equal(res.status, 200);
  const info = await res.json();
  assert.equal(typeof info.version, "string");
  assert.match(info.version, /^\d+\.\d+\.\d+/);
  assert.equal(info.flags.assistants, true);
  assert.equal(info.flags.crons, true, "crons are served");
  // Both backends have a store (Postgres, or memory with the offline
  // embedder).
  assert.equal(info.flags.store, true, `store flag on ${backend}`);
  assert.equal(typeof info.metadata, "object");
});

test("/info needs the API key: none is 401, a wrong one is 401 with a different detail", async () => {
  const none = await fetch(apiUrl + "/info");
  assert.equal(none.status, 401);
  const noneBody = await none.json();
  const wrong = await fetch(apiUrl + "/info", { headers: { "x-api-key": "not-the-token" } });
  assert.equal(wrong.status, 401);
  const wrongBody = await wrong.json();
  assert.notEqual(noneBody.detail, wrongBody.detail);
  assert.ok(!wrongBody.detail.includes("not-the-token"), "the detail echoes the key sent");
  // The Authorization header works as well as x-api-key.
  const bearer = await fetch(apiUrl + "/info", { headers: { authorization: `Bearer ${process.env.LANGGRAPH_API_KEY}` } });
  assert.equal(bearer.status, 200);
});
