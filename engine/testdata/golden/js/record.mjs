// record.mjs runs each golden case's graph in LangGraph.js on a MemorySaver,
// replays the case's operations, normalises what it observed and writes
// ../<case>.json. engine/golden_test.go replays the same operations on the
// Go engine, normalises the same way and compares.
//
//   cd engine/testdata/golden/js && npm ci && node record.mjs [case...]
//
// The normalisation (mirrored in engine/golden_test.go; change both):
//   - checkpoint ids become "<ns path>#<n>": the namespace with its task ids
//     cut ("" is "root", a subgraph "child", nested "outer|inner"), and n
//     the checkpoint's index in that namespace path's creation order on the
//     thread (ids are time-ordered on both sides);
//   - task ids become "task:<name>"; namespaces "node:<task id>" become
//     "node"; interrupt ids become "interrupt:<value as canonical JSON>",
//     so several interrupts are told apart by value whatever order they
//     came in (cases give parallel interrupts distinct values);
//   - timestamps, run ids, ls_* and thread_id metadata and the config's
//     extra keys (recursion_limit, tags, checkpoint_map) are dropped;
//   - errors become their kind: "GraphRecursionError", "InvalidUpdateError",
//     ..., or "message:<the node's error message>";
//   - the task "start" payload keeps id, name, input and triggers (what
//     Python sends; LangGraph.js adds interrupts and metadata);
//   - "checkpoints" task entries drop path (Python sends none).
//
// Every stream part is recorded as [ns, mode, payload, step]: step is the
// part's superstep within its stream, counted per namespace (the raw one,
// task ids included) from a boundary both sides emit:
//   - with a checkpointer, the checkpoints: a checkpoint closes its step,
//     so a "checkpoints" part (and its "debug" twin, matched by checkpoint
//     id) carries the number of earlier checkpoints of its namespace in
//     the stream, and any other part the number of checkpoints before it;
//   - without one (no checkpoints then), the debug task events, which
//     carry their step: the counter of a namespace goes up at each task
//     start whose step differs from the last start's (a start opens its
//     step); a "tasks" start takes its step from its "debug" twin, matched
//     by task id (it comes first).
// The boundary mode ("checkpoints", or "debug") is added to the stream
// when the case does not ask for it, and its parts are then dropped from
// what is recorded (stepLabels).
// Order-robustness lives in the Go comparison (see golden_test.go).

import { readdir, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Command, MemorySaver, Send } from "@langchain/langgraph";

const here = path.dirname(fileURLToPath(import.meta.url));

// canonical is JSON with object keys sorted, so files are stable and
// interrupt labels do not depend on key order.
export function canonical(v) {
  return JSON.stringify(sortKeys(v));
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v).sort()) {
      if (v[k] !== undefined) out[k] = sortKeys(v[k]);
    }
    return out;
  }
  return v;
}

// plain turns class instances (Send, Overwrite, Command) into JSON data.
function plain(v) {
  return v === undefined ? null : JSON.parse(JSON.stringify(v));
}

// taskId labels a task's id by its name (null when it has none).
const taskId = (t) => (t.id ? `task:${t.name}` : null);

const nsPath = (ns) => (ns === "" ? "root" : ns.split("|").map((s) => s.split(":")[0]).join("|"));

// Labeller assigns checkpoint labels from the saver's storage.
class Labeller {
  constructor(saver) {
    this.saver = saver;
  }

  // ids returns { nsPath: [ids sorted] } for a thread.
  ids(thread) {
    const byPath = {};
    for (const [ns, cps] of Object.entries(this.saver.storage[thread] ?? {})) {
      const p = nsPath(ns);
      byPath[p] = (byPath[p] ?? []).concat(Object.keys(cps));
    }
    for (const p of Object.keys(byPath)) byPath[p].sort();
    return byPath;
  }

  label(thread, ns, id) {
    const ids = this.ids(thread)[nsPath(ns)] ?? [];
    const i = ids.indexOf(id);
    if (i < 0) return `unknown:${nsPath(ns)}`;
    return `${nsPath(ns)}#${i}`;
  }

  // resolve turns a label back into { ns, id } (ns: any stored namespace
  // whose path matches and that holds the id).
  resolve(thread, label) {
    const [p, n] = label.split("#");
    const id = (this.ids(thread)[p] ?? [])[Number(n)];
    if (!id) throw new Error(`no checkpoint ${label} on thread ${thread}`);
    for (const [ns, cps] of Object.entries(this.saver.storage[thread] ?? {})) {
      if (nsPath(ns) === p && cps[id]) return { ns, id };
    }
    throw new Error(`no namespace for ${label}`);
  }
}

export class Normaliser {
  constructor(labeller, thread) {
    this.l = labeller;
    this.thread = thread;
  }

  config(cfg) {
    const c = cfg?.configurable;
    if (!c || !c.checkpoint_id) return null;
    return `ckpt:${this.l.label(c.thread_id ?? this.thread, c.checkpoint_ns ?? "", c.checkpoint_id)}`;
  }

  ns(ns) {
    return ns.map((s) => s.split(":")[0]);
  }

  interrupt(i) {
    return { id: `interrupt:${canonical(plain(i.value))}`, value: plain(i.value) };
  }

  interrupts(list) {
    return (list ?? []).map((i) => this.interrupt(i));
  }

  error(e) {
    if (e === null || e === undefined) return null;
    if (typeof e === "string") return `message:${e}`;
    const known = ["GraphRecursionError", "InvalidUpdateError", "EmptyInputError", "GraphValueError"];
    if (known.includes(e.name) || known.includes(e.lc_error_code)) return e.name;
    return `message:${e.message ?? String(e)}`;
  }

  metadata(md) {
    const parents = {};
    for (const [ns, id] of Object.entries(md?.parents ?? {})) {
      parents[nsPath(ns)] = `ckpt:${this.l.label(this.thread, ns, id)}`;
    }
    return { source: md?.source, step: md?.step, parents };
  }

  values(v) {
    if (v && typeof v === "object" && !Array.isArray(v) && "__interrupt__" in v) {
      return { ...plain(v), __interrupt__: this.interrupts(v.__interrupt__) };
    }
    return plain(v);
  }

  update(u) {
    const out = {};
    for (const [k, v] of Object.entries(u)) {
      out[k] = k === "__interrupt__" ? this.interrupts(v) : plain(v);
    }
    return out;
  }

  taskStart(t) {
    return { id: taskId(t), name: t.name, input: plain(t.input), triggers: plain(t.triggers) };
  }

  taskResult(t) {
    return {
      id: taskId(t),
      name: t.name,
      error: this.error(t.error),
      result: plain(t.result),
      interrupts: this.interrupts(t.interrupts),
    };
  }

  // ckptTask is a "checkpoints" task entry in Python's three shapes
  // (debug.py map_debug_checkpoint): with an error; with a non-empty
  // result; else interrupts only.
  ckptTask(t) {
    const state = this.taskState(t.state);
    if (t.error !== undefined && t.error !== null) return { id: taskId(t), name: t.name, error: this.error(t.error), state };
    const result = plain(t.result);
    const interrupts = this.interrupts(t.interrupts);
    if (result && Object.keys(result).length > 0) return { id: taskId(t), name: t.name, result, interrupts, state };
    return { id: taskId(t), name: t.name, interrupts, state };
  }

  taskState(s) {
    if (!s) return null;
    if (s.values !== undefined) return this.snapshot(s);
    return { ns: nsPath(s.configurable?.checkpoint_ns ?? "") };
  }

  checkpoint(c) {
    return {
      config: this.config(c.config),
      parent_config: this.config(c.parentConfig ?? c.parent_config),
      values: this.values(c.values),
      metadata: this.metadata(c.metadata),
      next: [...c.next].sort(),
      tasks: c.tasks.map((t) => this.ckptTask(t)),
    };
  }

  snapshot(s) {
    return {
      values: this.values(s.values),
      next: [...s.next].sort(),
      config: this.config(s.config),
      parent_config: this.config(s.parentConfig),
      metadata: this.metadata(s.metadata),
      tasks: s.tasks.map((t) => {
        const out = { id: taskId(t), name: t.name, path: plain(t.path), interrupts: this.interrupts(t.interrupts) };
        if (t.error !== undefined && t.error !== null) out.error = this.error(t.error);
        if (t.result !== undefined) out.result = plain(t.result);
        out.state = this.taskState(t.state);
        return out;
      }),
    };
  }

  part(ns, mode, payload) {
    let p;
    switch (mode) {
      case "values":
        p = this.values(payload);
        break;
      case "updates":
        p = this.update(payload);
        break;
      case "tasks":
        p = "input" in payload ? this.taskStart(payload) : this.taskResult(payload);
        break;
      case "checkpoints":
        p = this.checkpoint(payload);
        break;
      case "debug": {
        const inner =
          payload.type === "checkpoint"
            ? this.checkpoint(payload.payload)
            : payload.type === "task"
              ? this.taskStart(payload.payload)
              : this.taskResult(payload.payload);
        p = { step: payload.step, type: payload.type, payload: inner };
        break;
      }
      default:
        p = plain(payload);
    }
    return [this.ns(ns), mode, p];
  }
}

// boundaryMode is the stream mode whose parts mark the supersteps: see
// the file comment.
export const boundaryMode = (hasCheckpointer) => (hasCheckpointer ? "checkpoints" : "debug");

// stepLabels gives each raw part [ns (task ids included), mode, payload]
// its step (see the file comment) and drops the boundary mode's parts when
// that mode was added only for counting: it returns [ns, mode, payload,
// step].
export function stepLabels(raw, boundary, injected) {
  const count = {};
  const ckptStep = {};
  const lastDebugStep = {};
  const debugStepOf = {};
  for (const [ns, mode, payload] of raw) {
    if (mode === "debug" && payload.type === "task") debugStepOf[`${ns.join("|")}#${payload.payload.id}`] = payload.step;
  }
  const out = [];
  for (const [ns, mode, payload] of raw) {
    const key = ns.join("|");
    count[key] ??= 0;
    ckptStep[key] ??= {};
    let step = count[key];
    if (boundary === "checkpoints") {
      const c = mode === "checkpoints" ? payload : mode === "debug" && payload.type === "checkpoint" ? payload.payload : null;
      const id = c?.config?.configurable?.checkpoint_id;
      if (id !== undefined) {
        if (!(id in ckptStep[key])) ckptStep[key][id] = count[key]++;
        step = ckptStep[key][id];
      }
    } else {
      const id = mode === "debug" && payload.type === "task" ? payload.payload.id : mode === "tasks" && "input" in payload ? payload.id : undefined;
      const debugStep = debugStepOf[`${key}#${id}`];
      if (id !== undefined && debugStep !== undefined && debugStep !== lastDebugStep[key]) {
        lastDebugStep[key] = debugStep;
        count[key]++;
      }
      step = count[key];
    }
    if (injected && mode === boundary) continue;
    out.push([ns, mode, payload, step]);
  }
  return out;
}

// command builds a LangGraph.js Command from a golden command: resume,
// resume_map (interrupt labels → answers), update, goto (a node, a list,
// or {"send": [node, arg]} items).
async function command(graph, cfg, c, labeller, thread) {
  const args = {};
  if ("resume" in c) args.resume = c.resume;
  if (c.resume_map) {
    const st = await graph.getState(cfg, { subgraphs: true });
    const ids = {};
    const walk = (s) => {
      for (const t of s.tasks) {
        for (const i of t.interrupts ?? []) {
          // Labels are interrupt values: two pending interrupts with equal
          // values cannot be told apart by label.
          const label = `interrupt:${canonical(plain(i.value))}`;
          if (ids[label] !== undefined && ids[label] !== i.id) {
            throw new Error(`resume map: two pending interrupts share the label ${label} (ids ${ids[label]} and ${i.id}); give them distinct values`);
          }
          ids[label] = i.id;
        }
        if (t.state?.tasks) walk(t.state);
      }
    };
    walk(st);
    args.resume = {};
    for (const [label, v] of Object.entries(c.resume_map)) {
      if (!ids[label]) throw new Error(`no pending interrupt ${label}`);
      args.resume[ids[label]] = v;
    }
  }
  if (c.update) args.update = c.update;
  if (c.goto !== undefined) {
    const one = (g) => (typeof g === "string" ? g : new Send(g.send[0], g.send[1]));
    args.goto = Array.isArray(c.goto) ? c.goto.map(one) : one(c.goto);
  }
  void labeller;
  void thread;
  return new Command(args);
}

function configFor(step, labeller) {
  const thread = step.thread ?? "1";
  const cfg = { configurable: { thread_id: thread } };
  if (step.checkpoint !== undefined) {
    const { ns, id } = labeller.resolve(thread, step.checkpoint.replace(/^ckpt:/, ""));
    cfg.configurable.checkpoint_id = id;
    cfg.configurable.checkpoint_ns = ns;
  }
  if (step.recursion_limit) cfg.recursionLimit = step.recursion_limit;
  return cfg;
}

// The op fields copied into the golden file as they are.
const opFields = ["op", "thread", "checkpoint", "input", "command", "modes", "subgraphs", "recursion_limit", "values", "as_node"];

async function runCase(c) {
  const calls = {};
  const saver = c.checkpointer === false ? undefined : new MemorySaver();
  const graph = c.build({ calls, checkpointer: saver });
  const labeller = new Labeller(saver ?? new MemorySaver());
  const steps = [];
  for (const s of c.steps) {
    const thread = s.thread ?? "1";
    const norm = new Normaliser(labeller, thread);
    const out = {};
    for (const f of opFields) if (s[f] !== undefined) out[f] = s[f];
    switch (s.op) {
      case "stream": {
        const cfg = configFor(s, labeller);
        const input = s.command ? await command(graph, cfg, s.command, labeller, thread) : (s.input ?? null);
        const raw = [];
        let error = null;
        const boundary = boundaryMode(!!saver);
        const injected = !s.modes.includes(boundary);
        try {
          const stream = await graph.stream(input, {
            ...cfg,
            streamMode: injected ? [...s.modes, boundary] : s.modes,
            subgraphs: !!s.subgraphs,
          });
          for await (const p of stream) raw.push(s.subgraphs ? p : [[], ...p]);
        } catch (e) {
          error = norm.error(e);
        }
        out.parts = stepLabels(raw, boundary, injected).map(([ns, mode, payload, step]) => [...norm.part(ns, mode, payload), step]);
        out.error = error;
        break;
      }
      case "get_state": {
        const cfg = configFor(s, labeller);
        // A snapshot applies the pending writes of finished tasks, so it
        // fails as the run did when those writes conflict.
        try {
          out.state = norm.snapshot(await graph.getState(cfg, { subgraphs: !!s.subgraphs }));
        } catch (e) {
          out.state = null;
          out.error = norm.error(e);
        }
        break;
      }
      case "history": {
        const cfg = configFor(s, labeller);
        out.history = [];
        for await (const h of graph.getStateHistory(cfg)) out.history.push(norm.snapshot(h));
        break;
      }
      case "update_state": {
        const cfg = configFor(s, labeller);
        let values = s.values ?? null;
        if (s.command) values = await command(graph, cfg, s.command, labeller, thread);
        try {
          const res = await graph.updateState(cfg, values, s.as_node);
          out.config = norm.config(res);
          out.error = null;
        } catch (e) {
          out.config = null;
          out.error = norm.error(e);
        }
        break;
      }
      case "calls":
        out.calls = { ...calls };
        break;
      default:
        throw new Error(`${c.name}: unknown op ${s.op}`);
    }
    steps.push(out);
  }
  let recorded = { name: c.name, description: c.description, steps };
  if (c.note) recorded = { name: c.name, description: c.description, note: c.note, steps };
  if (c.python) recorded = c.python(recorded);
  return recorded;
}

async function loadCases() {
  const dir = path.join(here, "cases");
  const cases = [];
  for (const f of (await readdir(dir)).filter((f) => f.endsWith(".mjs")).sort()) {
    const mod = await import(path.join(dir, f));
    cases.push(...mod.default);
  }
  const names = new Set();
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`two cases named ${c.name}`);
    names.add(c.name);
  }
  return cases;
}

const wanted = process.argv.slice(2);
for (const c of await loadCases()) {
  if (wanted.length > 0 && !wanted.includes(c.name)) continue;
  const recorded = await runCase(c);
  const file = path.join(here, "..", `${c.name}.json`);
  await writeFile(file, JSON.stringify(sortKeys(recorded), null, 2) + "\n");
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}
