// The long-term memory store: the same store the Studio's store page shows.
import { test } from "node:test";
import assert from "node:assert/strict";
import { client, raw, rejects, unique } from "./lib.mjs";

const c = client();

test("put, get, overwrite and delete an item; a miss is null", async () => {
  const ns = ["users", unique("u")];
  assert.equal(await c.store.putItem(ns, "prefs", { theme: "dark", size: 2 }), undefined, "put answers 204");
  const item = await c.store.getItem(ns, "prefs");
  assert.deepEqual(item.namespace, ns);
  assert.equal(item.key, "prefs");
  assert.deepEqual(item.value, { theme: "dark", size: 2 });
  assert.ok(!Number.isNaN(Date.parse(item.created_at)), `created_at ${item.created_at}`);
  assert.ok(!Number.isNaN(Date.parse(item.updated_at)), `updated_at ${item.updated_at}`);

  await c.store.putItem(ns, "prefs", { theme: "light" });
  const again = await c.store.getItem(ns, "prefs");
  assert.deepEqual(again.value, { theme: "light" }, "a put replaces the value");
  assert.equal(again.created_at, item.created_at, "an overwrite keeps created_at");
  assert.ok(Date.parse(again.updated_at) >= Date.parse(item.updated_at));

  assert.equal(await c.store.getItem(ns, "nope"), null, "a missing key is null");
  assert.equal(await c.store.deleteItem(ns, "prefs"), undefined, "delete answers 204");
  assert.equal(await c.store.getItem(ns, "prefs"), null, "a deleted item is gone");
  // Deleting what is not there is not an error.
  await c.store.deleteItem(ns, "prefs");
});

test("GET /store/items for a miss is 200 with a JSON null body", async () => {
  const res = await raw(`/store/items?namespace=${unique("n")}&key=k`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^application\/json/);
  assert.equal(await res.text(), "null");
});

test("search by namespace prefix, filter and pagination", async () => {
  const root = unique("s");
  await c.store.putItem([root, "a"], "1", { kind: "fact", n: 1 });
  await c.store.putItem([root, "a"], "2", { kind: "note", n: 2 });
  await c.store.putItem([root, "b"], "3", { kind: "fact", n: 3 });
  await c.store.putItem([unique("other")], "4", { kind: "fact", n: 4 });

  const all = await c.store.searchItems([root]);
  assert.deepEqual(all.items.map((i) => i.key).sort(), ["1", "2", "3"], "a prefix matches every namespace under it and nothing else");
  const underA = await c.store.searchItems([root, "a"]);
  assert.deepEqual(underA.items.map((i) => i.key).sort(), ["1", "2"]);

  const facts = await c.store.searchItems([root], { filter: { kind: "fact" } });
  assert.deepEqual(facts.items.map((i) => i.key).sort(), ["1", "3"], "the filter matches values by field");
  assert.ok(facts.items.every((i) => i.value.kind === "fact"));

  const page1 = await c.store.searchItems([root], { limit: 2, offset: 0 });
  const page2 = await c.store.searchItems([root], { limit: 2, offset: 2 });
  assert.equal(page1.items.length, 2);
  assert.equal(page2.items.length, 1);
  const keys = [...page1.items, ...page2.items].map((i) => i.key).sort();
  assert.deepEqual(keys, ["1", "2", "3"], "pages neither repeat nor skip an item");
});

test("a natural-language query ranks items by score, best first", async () => {
  const ns = ["memories", unique("m")];
  await c.store.putItem(ns, "car", { text: "I drive a blue electric car to work every day." });
  await c.store.putItem(ns, "job", { text: "I work as a nurse on night shifts at the hospital." });
  await c.store.putItem(ns, "pet", { text: "My cat sleeps on the sofa all afternoon." });
  // An item kept out of the index is found by prefix but never by query.
  await c.store.putItem(ns, "hidden", { text: "electric vehicle charging notes" }, { index: false });

  const { items } = await c.store.searchItems(ns, { query: "what vehicle do I own", limit: 3 });
  assert.ok(items.length >= 1, "the query found nothing");
  assert.equal(items[0].key, "car", `best match: ${JSON.stringify(items.map((i) => [i.key, i.score]))}`);
  for (const i of items) assert.equal(typeof i.score, "number", `item ${i.key} has no score`);
  for (let k = 1; k < items.length; k++) assert.ok(items[k - 1].score >= items[k].score, "scores are not in descending order");
  assert.ok(!items.some((i) => i.key === "hidden"), "an item put with index:false was found by a query");

  const plain = await c.store.searchItems(ns);
  assert.ok(plain.items.some((i) => i.key === "hidden"), "an unindexed item is still listed by prefix");
});

test("list namespaces with prefix, suffix, max_depth and pagination", async () => {
  const root = unique("ns");
  await c.store.putItem([root, "users", "u1"], "k", { v: 1 });
  await c.store.putItem([root, "users", "u2"], "k", { v: 1 });
  await c.store.putItem([root, "teams", "t1"], "k", { v: 1 });

  const { namespaces } = await c.store.listNamespaces({ prefix: [root] });
  assert.deepEqual(
    namespaces.map((n) => n.join("/")).sort(),
    [`${root}/teams/t1`, `${root}/users/u1`, `${root}/users/u2`],
  );
  const users = await c.store.listNamespaces({ prefix: [root, "users"] });
  assert.equal(users.namespaces.length, 2);
  const bySuffix = await c.store.listNamespaces({ prefix: [root], suffix: ["t1"] });
  assert.deepEqual(bySuffix.namespaces, [[root, "teams", "t1"]]);
  const shallow = await c.store.listNamespaces({ prefix: [root], maxDepth: 2 });
  assert.deepEqual(shallow.namespaces.map((n) => n.join("/")).sort(), [`${root}/teams`, `${root}/users`], "max_depth truncates and dedupes");
  const page = await c.store.listNamespaces({ prefix: [root], limit: 1, offset: 1 });
  assert.equal(page.namespaces.length, 1);
});

test("bad store requests are 422 naming the field", async () => {
  const noKey = await raw("/store/items", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ namespace: ["a"], value: { x: 1 } }),
  });
  assert.equal(noKey.status, 422);
  assert.match((await noKey.json()).detail, /key/);

  const badValue = await raw("/store/items", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ namespace: ["a"], key: "k", value: [1, 2] }),
  });
  assert.equal(badValue.status, 422, "a value must be an object");
  assert.match((await badValue.json()).detail, /value/);

  const badNs = await raw("/store/items/search", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ namespace_prefix: "users" }),
  });
  assert.equal(badNs.status, 422);
  assert.match((await badNs.json()).detail, /namespace_prefix/);

  await rejects(c.store.searchItems(["a"], { limit: -1 }), 422);
});
