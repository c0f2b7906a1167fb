// Errors the SDK must be able to tell apart without retrying: unknown
// routes and resources, wrong methods, a wrong key. Each is a non-2xx JSON
// {detail} the SDK throws as HTTPError.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import { apiUrl, client, raw, rejects } from "./lib.mjs";

test("an unknown API route is a 404 with a JSON detail naming it", async () => {
  const res = await raw("/no/such/route", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  assert.equal(res.status, 404);
  assert.match(res.headers.get("content-type"), /^application\/json/);
  const body = await res.json();
  assert.match(body.detail, /\/no\/such\/route/);
});

test("a method a route does not take is a 405 with a JSON detail naming the request", async () => {
  const res = await raw("/ok", { method: "DELETE" });
  assert.equal(res.status, 405);
  const body = await res.json();
  assert.match(body.detail, /DELETE \/ok/);
});

test("the SDK sees an unknown API route as HTTPError 404, and does not retry it", async () => {
  let calls = 0;
  const c = new Client({
    apiUrl,
    callerOptions: {
      maxRetries: 3,
      fetch: (...args) => {
        calls++;
        return fetch(...args);
      },
    },
  });
  // Every route the SDK's methods call is served; its own request path
  // (BaseClient.fetch) reaches one that is not.
  await rejects(c.threads.fetch("/no/such/route", { method: "POST", json: {} }), 404);
  assert.equal(calls, 1, "the SDK retried a 404");
});

test("a wrong API key is a JSON 401 the SDK does not retry", async () => {
  const c = client({ apiKey: "wrong-key" });
  const body = await rejects(c.crons.search(), 401);
  assert.ok(!body.detail.includes("wrong-key"), "the detail echoes the key");
});
