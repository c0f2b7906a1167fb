// Records the models package's golden files from LangGraph.js: what
// messagesStateReducer (add_messages) and AIMessageChunk.concat do with
// each case's inputs. Run with `make golden/record` (npm ci first).
//
// Inputs are written in Python's dict form (the form Go reads); outputs
// are reduced to the fields both sides share, with generated ids
// replaced by "<id:N>" in order of appearance.
import { writeFileSync, mkdirSync } from "node:fs";
import { AIMessageChunk, HumanMessage, AIMessage, SystemMessage, ToolMessage, RemoveMessage } from "@langchain/core/messages";
import { messagesStateReducer } from "@langchain/langgraph";

const out = new URL("../", import.meta.url);

// build turns a Python-shaped dict into a JS message; strings, role dicts
// and role pairs are passed as they are, to exercise coercion.
function build(d) {
  if (typeof d === "string" || Array.isArray(d) || d.role !== undefined) return d;
  const f = { content: d.content ?? "", id: d.id ?? undefined, name: d.name ?? undefined };
  if (d.additional_kwargs) f.additional_kwargs = d.additional_kwargs;
  if (d.response_metadata) f.response_metadata = d.response_metadata;
  switch (d.type) {
    case "human": return new HumanMessage(f);
    case "system": return new SystemMessage(f);
    case "ai": return new AIMessage({ ...f, tool_calls: d.tool_calls ?? [], usage_metadata: d.usage_metadata ?? undefined });
    case "AIMessageChunk": return new AIMessageChunk({ ...f, tool_call_chunks: d.tool_call_chunks ?? [], usage_metadata: d.usage_metadata ?? undefined });
    case "tool": return new ToolMessage({ ...f, tool_call_id: d.tool_call_id, status: d.status });
    case "remove": return new RemoveMessage({ id: d.id });
  }
  throw new Error(`unknown type ${d.type}`);
}
const side = (v) => (Array.isArray(v) && !(v.length === 2 && typeof v[0] === "string" && v.__pair) ? v.map(build) : build(v));

// shape keeps the fields Go compares.
function shape(m) {
  const o = { type: m.type === "ai" && m.constructor.name === "AIMessageChunk" ? "AIMessageChunk" : m.type, content: m.content, id: m.id ?? null, name: m.name ?? null };
  if (m.type === "ai") {
    o.tool_calls = (m.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args, id: c.id ?? null }));
    o.invalid_tool_calls = (m.invalid_tool_calls ?? []).map((c) => ({ name: c.name ?? null, args: c.args ?? null, id: c.id ?? null }));
    o.usage_metadata = m.usage_metadata ?? null;
    if (Object.keys(m.additional_kwargs ?? {}).length) o.additional_kwargs = m.additional_kwargs;
    if (Object.keys(m.response_metadata ?? {}).length) o.response_metadata = m.response_metadata;
  }
  if (o.type === "AIMessageChunk") {
    o.tool_call_chunks = (m.tool_call_chunks ?? []).map((c) => ({ name: c.name ?? null, args: c.args ?? null, id: c.id ?? null, index: c.index ?? null }));
  }
  if (m.type === "tool") { o.tool_call_id = m.tool_call_id; o.status = m.status ?? "success"; }
  return o;
}

// normalise replaces uuids not given by the case with <id:N>.
function normalise(result, given) {
  const ids = new Map();
  return JSON.parse(JSON.stringify(result), (k, v) => {
    if (k === "id" && typeof v === "string" && !given.has(v) && /^[0-9a-f-]{36}$/.test(v)) {
      if (!ids.has(v)) ids.set(v, `<id:${ids.size + 1}>`);
      return ids.get(v);
    }
    return v;
  });
}
function givenIDs(x, set = new Set()) {
  JSON.stringify(x, (k, v) => { if (k === "id" && typeof v === "string") set.add(v); return v; });
  return set;
}

const h = (content, id) => ({ type: "human", content, id });
const ai = (content, id, extra = {}) => ({ type: "ai", content, id, ...extra });
const rm = (id) => ({ type: "remove", id });

const addCases = [
  { name: "append", left: [h("hi", "1")], right: [ai("hello", "2")] },
  { name: "append_single", left: [h("hi", "1")], right: ai("hello", "2") },
  { name: "replace_by_id", left: [h("hi", "1"), ai("hello", "2")], right: [ai("hello again", "2")] },
  { name: "replace_keeps_position", left: [h("a", "1"), h("b", "2"), h("c", "3")], right: [h("B", "2"), h("d", "4")] },
  { name: "remove_by_id", left: [h("a", "1"), h("b", "2"), h("c", "3")], right: [rm("2")] },
  { name: "remove_then_readd", left: [h("a", "1"), h("b", "2")], right: [rm("2"), h("b2", "2")] },
  { name: "remove_new_in_same_write", left: [h("a", "1")], right: [h("b", "2"), rm("2")] },
  { name: "remove_unknown_id", left: [h("a", "1")], right: [rm("nope")] },
  { name: "remove_all", left: [h("a", "1"), h("b", "2")], right: [rm("__remove_all__"), h("c", "3")] },
  { name: "remove_all_last_marker_wins", left: [h("a", "1")], right: [h("x", "9"), rm("__remove_all__"), h("c", "3"), rm("__remove_all__"), h("d", "4")] },
  { name: "remove_all_alone", left: [h("a", "1")], right: [rm("__remove_all__")] },
  { name: "ids_generated", left: [h("a")], right: [ai("b"), h("c")] },
  { name: "string_is_human", left: [], right: "hello" },
  { name: "strings_list", left: [h("a", "1")], right: ["x", "y"] },
  { name: "role_dicts", left: [], right: [
    { role: "system", content: "be brief", id: "s" },
    { role: "user", content: "hi", id: "u" },
    { role: "assistant", content: "", id: "a", tool_calls: [{ id: "call_1", type: "function", function: { name: "search", arguments: "{\"q\":\"go\"}" } }] },
    { role: "tool", content: "found", tool_call_id: "call_1", id: "t" },
  ] },
  { name: "mixed_inputs", left: [h("a", "1")], right: ["plain", { role: "assistant", content: "dict", id: "d" }, ai("typed", "t")] },
  { name: "chunk_becomes_message", left: [], right: [{ type: "AIMessageChunk", content: "part", id: "c1" }] },
  { name: "tool_message", left: [ai("", "1", { tool_calls: [{ name: "f", args: { x: 1 }, id: "call_1" }] })], right: [{ type: "tool", content: "42", tool_call_id: "call_1", id: "2", status: "success" }] },
];

const chunk = (content, extra = {}) => ({ type: "AIMessageChunk", content, ...extra });
const tcc = (index, name, args, id) => ({ name, args, id, index });
const chunkCases = [
  { name: "text", chunks: [chunk("Hel", { id: "run-1" }), chunk("lo"), chunk(", world")] },
  { name: "blocks_by_index", chunks: [
    chunk([{ type: "text", text: "Hel", index: 0 }], { id: "msg_1" }),
    chunk([{ type: "text", text: "lo", index: 0 }]),
    chunk([{ type: "tool_use", id: "toolu_1", name: "search", input: {}, index: 1 }]),
  ] },
  { name: "tool_call_chunks", chunks: [
    chunk("", { id: "msg_2", tool_call_chunks: [tcc(0, "search", "", "call_1")] }),
    chunk("", { tool_call_chunks: [tcc(0, null, "{\"q\": \"lang", null)] }),
    chunk("", { tool_call_chunks: [tcc(0, null, "graph\"}", null)] }),
  ] },
  { name: "tool_call_chunks_partial", chunks: [
    chunk("", { id: "msg_3", tool_call_chunks: [tcc(0, "search", "{\"q\": \"lang", "call_1")] }),
  ] },
  { name: "tool_call_chunks_parallel", chunks: [
    chunk("", { id: "msg_4", tool_call_chunks: [tcc(0, "a", "{\"x\":", "call_a")] }),
    chunk("", { tool_call_chunks: [tcc(1, "b", "{\"y\": 2}", "call_b")] }),
    chunk("", { tool_call_chunks: [tcc(0, null, " 1}", null)] }),
  ] },
  { name: "tool_call_chunks_invalid", chunks: [
    chunk("", { id: "msg_5", tool_call_chunks: [tcc(0, "f", "[1, 2", "call_1")] }),
    chunk("", { tool_call_chunks: [tcc(1, "g", "\"just a string\"", "call_2")] }),
  ] },
  { name: "usage_sum", chunks: [
    chunk("a", { id: "msg_6", usage_metadata: { input_tokens: 10, output_tokens: 0, total_tokens: 10, input_token_details: { cache_read: 4, cache_creation: 0 } } }),
    chunk("b", { usage_metadata: { input_tokens: 0, output_tokens: 5, total_tokens: 5, output_token_details: { reasoning: 2 } } }),
  ] },
];

function recordAdd(c) {
  const given = givenIDs([c.left, c.right]);
  try {
    const res = messagesStateReducer(side(c.left), side(c.right));
    return { name: c.name, left: c.left, right: c.right, want: normalise(res.map(shape), given) };
  } catch (e) {
    return { name: c.name, left: c.left, right: c.right, error: String(e.message) };
  }
}
function recordChunks(c) {
  let acc = build(c.chunks[0]);
  for (const d of c.chunks.slice(1)) acc = acc.concat(build(d));
  return { name: c.name, chunks: c.chunks, want: shape(acc) };
}

mkdirSync(out, { recursive: true });
writeFileSync(new URL("add_messages.json", out), JSON.stringify({ recorded_with: "@langchain/langgraph 1.7.3, @langchain/core 1.4.0", cases: addCases.map(recordAdd) }, null, 2) + "\n");
writeFileSync(new URL("chunks.json", out), JSON.stringify({ recorded_with: "@langchain/core 1.4.0", cases: chunkCases.map(recordChunks) }, null, 2) + "\n");
console.log(`recorded ${addCases.length} add_messages cases and ${chunkCases.length} chunk cases`);
