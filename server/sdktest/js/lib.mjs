// Shared helpers of the SDK scenarios. The Go test (server/sdktest) starts
// the Studio behind its recording proxy and sets:
//   SUPERSTEP_URL      the proxy's URL (the API is served at its root)
//   LANGGRAPH_API_KEY  the Studio's token; the SDK sends it as x-api-key
//   SUPERSTEP_BACKEND  "postgres" or "memory"
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";

export const apiUrl = process.env.SUPERSTEP_URL;
export const apiKey = process.env.LANGGRAPH_API_KEY;
export const backend = process.env.SUPERSTEP_BACKEND ?? "memory";

if (!apiUrl) {
  throw new Error("SUPERSTEP_URL is not set: run the scenarios through `go test ./server/sdktest`");
}

// The proxy's header that cuts a stream's connection after n events, once
// per token (see server/sdktest.DropHeader).
export const DROP_HEADER = "X-Sdktest-Drop";

// client is an SDK client on the server under test. No retries on failed
// statuses, so a status the SDK would retry fails the scenario at once
// instead of being hidden by a second attempt; extra options go to the
// Client (defaultHeaders, apiKey).
export function client(options = {}) {
  return new Client({ apiUrl, callerOptions: { maxRetries: 0 }, ...options });
}

// The registered graphs (cmd/studio: examples/ plus the demo); the offline
// model makes their outputs deterministic.
export const graphs = {
  transfer: "transfer-approval", // interrupts for an approval
  research: "research-subgraph", // has a subgraph
  mapReduce: "map-reduce", // fans out with Send
  cveAgent: "cve-agent", // a chat model: messages stream
  demo: "demo-review", // a retried node, an interrupt, a 300 ms node
  lowLevel: "pregel-lowlevel",
  cached: "cached-lookup",
};

// The example inputs the Studio's start forms use (examples/registry.go).
export const inputs = {
  [graphs.transfer]: { request: "Please send 2,500 to Alice Martin for the March invoice." },
  [graphs.research]: { question: "Compare Postgres and SQLite for a multi-user web app" },
  [graphs.mapReduce]: {
    document:
      "## Plan\nShip on Friday. Then rest.\n## Risks\nThe vendor may slip. We have a fallback.\n## Budget\nWe stay within the quarter's budget. Travel is extra.\n",
  },
  [graphs.cveAgent]: { cve_id: "CVE-2021-44228" },
  [graphs.demo]: { topic: "pgvector for agent memory" },
  [graphs.lowLevel]: { input: 123 },
  [graphs.cached]: { pair: "EUR/USD", amount: 120 },
};

// The Python platform's and LangGraph JS's namespace for the system
// assistants' ids: uuid5(graph_id, this).
export const ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

// uuid5 is RFC 4122's name-based UUID (SHA-1), as the system assistants'
// ids are derived.
export async function uuid5(name, namespace = ASSISTANT_NAMESPACE) {
  const { createHash } = await import("node:crypto");
  const ns = Buffer.from(namespace.replace(/-/g, ""), "hex");
  const h = createHash("sha1").update(ns).update(Buffer.from(name, "utf8")).digest();
  const b = Buffer.from(h.subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x50;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// unique is a label no other scenario (or earlier run on the same
// database) uses, for metadata filters and store namespaces.
export function unique(prefix = "t") {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

// collect drains an SDK stream into its chunks ({event, data, id}).
export async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

// events lists the event names of chunks, in order.
export function events(chunks) {
  return chunks.map((c) => c.event);
}

// rejects asserts that promise fails with an SDK HTTPError of status, and
// returns the parsed {detail} body.
export async function rejects(promise, status) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `want HTTP ${status}, got success`);
  assert.equal(err.status, status, `want HTTP ${status}, got: ${err.message}`);
  let body;
  try {
    body = JSON.parse(err.text);
  } catch {
    assert.fail(`the ${status} body is not JSON: ${err.text}`);
  }
  assert.equal(typeof body.detail, "string", `the ${status} body has no detail string: ${err.text}`);
  assert.ok(body.detail.length > 0, "the detail is empty");
  return body;
}

// raw sends a request the SDK has no method for (or sends differently),
// with the API key, and returns the fetch Response.
export async function raw(path, init = {}) {
  const headers = { ...(apiKey ? { "x-api-key": apiKey } : {}), ...(init.headers ?? {}) };
  return fetch(apiUrl + path, { ...init, headers });
}

// until polls check every 50 ms until it returns a truthy value (then
// returns it) or ms pass (then fails with what). For states only reachable
// through time (a run still pending, a status after a cancel), never to
// order two requests.
export async function until(what, check, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
