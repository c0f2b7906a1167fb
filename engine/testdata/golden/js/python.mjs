// Edits that turn a LangGraph.js recording into Python LangGraph's
// behaviour, for the cases where the two differ. A case names the edit in
// its `python` field; the edit adds its reason to the case's note.

function withNote(rec, note) {
  return { ...rec, note: rec.note ? `${rec.note} ${note}` : note };
}

// interruptValues: at a dynamic interrupt Python's "values" part is the
// current state plus "__interrupt__" (_loop.py output_writes); LangGraph.js
// sends the "__interrupt__" key alone. At a breakpoint Python sends no
// "values" part at all (only updates {"__interrupt__": ()}, _loop.py
// _suppress_interrupt); LangGraph.js sends {"__interrupt__": []}. The
// current state is the last "values" part of the same namespace in the
// same stream: no step has completed since.
export function interruptValues(rec) {
  const steps = rec.steps.map((step) => {
    if (step.op !== "stream") return step;
    const last = {};
    const parts = [];
    for (const part of step.parts) {
      const [ns, mode, payload, stepNo] = part;
      const key = JSON.stringify(ns);
      if (mode !== "values" || payload === null || typeof payload !== "object" || !("__interrupt__" in payload)) {
        if (mode === "values") last[key] = payload;
        parts.push(part);
        continue;
      }
      if (payload.__interrupt__.length === 0) continue;
      if (!(key in last)) throw new Error(`${rec.name}: no values part before the interrupt in ${key}`);
      // A graph streaming one channel's raw value gets the interrupts
      // alone (_loop.py output_writes, when output_keys is a string).
      const state = last[key];
      const isMap = state !== null && typeof state === "object" && !Array.isArray(state);
      parts.push([ns, mode, isMap ? { ...state, __interrupt__: payload.__interrupt__ } : { __interrupt__: payload.__interrupt__ }, stepNo]);
    }
    return { ...step, parts };
  });
  return withNote(
    { ...rec, steps },
    "Python edit: LangGraph.js streams a dynamic interrupt's values part as {__interrupt__} alone and a breakpoint's as {__interrupt__: []}; Python streams the current state plus __interrupt__, and nothing at a breakpoint (_loop.py output_writes, _suppress_interrupt).",
  );
}

// ambiguousResume: with several interrupts pending, Python refuses a
// scalar Command(resume) before the run writes or streams anything
// (_loop.py _first: RuntimeError "When there are multiple pending
// interrupts, ..."); LangGraph.js answers every pending interrupt with
// the value. The case records its other steps in LangGraph.js; this edit
// inserts the refused resume after step `at` (its state unchanged, so a
// get_state right after the step before it is repeated after it).
export function ambiguousResume(at, resume, modes) {
  return (rec) => {
    const refused = {
      op: "stream",
      command: { resume },
      modes,
      parts: [],
      error:
        "RuntimeError", // Python's class: "When there are multiple pending interrupts, you must specify the interrupt id when resuming."
    };
    const steps = [...rec.steps.slice(0, at + 1), refused, ...rec.steps.slice(at + 1)];
    return withNote(
      { ...rec, steps },
      "Python edit: Python refuses a scalar resume while several interrupts are pending (_loop.py _first raises RuntimeError before any write); LangGraph.js answers all of them with the one value. The refused step is inserted; the other steps are LangGraph.js's.",
    );
  };
}

// pushPaths: LangGraph.js gives a pending Send's task path as
// ["__pregel_push", index, false]; Python's is (PUSH, index)
// (_algo.py prepare_next_tasks: "(PUSH, idx of pending send)").
export function pushPaths(rec) {
  const fix = (v) => {
    if (Array.isArray(v)) return v.map(fix);
    if (v && typeof v === "object") {
      const out = {};
      for (const [k, x] of Object.entries(v)) {
        out[k] =
          k === "path" && Array.isArray(x) && x.length === 3 && x[0] === "__pregel_push" && x[2] === false ? x.slice(0, 2) : fix(x);
      }
      return out;
    }
    return v;
  };
  return withNote(
    { ...rec, steps: fix(rec.steps) },
    'Python edit: LangGraph.js gives a pending Send task\'s path as ["__pregel_push", i, false]; Python\'s is ("__pregel_push", i) (_algo.py prepare_next_tasks).',
  );
}

// noAbortErrors: when a task of a step fails, LangGraph.js aborts the
// step's other tasks and saves an error "This operation was aborted" even
// for a sibling that had already finished (its writes are saved too).
// Python saves only the finished task's writes: its snapshot task has the
// result and no error (test_pregel.py test_pending_writes_resume: one has
// result {"value": 2}, only two has an error).
export function noAbortErrors(rec) {
  const fix = (v) => {
    if (Array.isArray(v)) return v.map(fix);
    if (v && typeof v === "object") {
      const out = {};
      for (const [k, x] of Object.entries(v)) out[k] = fix(x);
      if (out.error === "message:This operation was aborted" && out.result !== undefined && "path" in out) delete out.error;
      return out;
    }
    return v;
  };
  return withNote(
    { ...rec, steps: fix(rec.steps) },
    'Python edit: LangGraph.js records "This operation was aborted" as the error of a task that had finished before its sibling failed; Python records only its result (test_pending_writes_resume).',
  );
}

// walkParts applies fn to every stream part [ns, mode, payload] of every
// step; the part keeps its step label (record.mjs stepLabels).
function walkParts(rec, fn) {
  const edit = (part) => [...fn(part.slice(0, 3)), ...part.slice(3)];
  const steps = rec.steps.map((step) => (step.op === "stream" ? { ...step, parts: step.parts.map(edit) } : step));
  return { ...rec, steps };
}

// joinTriggers: Python's StateGraph gives every node the trigger
// "branch:to:<node>" and appends a waiting edge's "join:…" channel to it
// (graph/state.py attach_node, attach_edge), and a task's triggers are
// sorted(proc.triggers) (_algo.py prepare_single_task); LangGraph.js
// gives a node with a waiting edge the join channel alone.
export function joinTriggers(rec) {
  const out = walkParts(rec, ([ns, mode, payload]) => {
    const fix = (p) => {
      if (!p || !Array.isArray(p.triggers) || p.triggers.length !== 1 || !p.triggers[0].startsWith("join:")) return p;
      const node = p.triggers[0].split(":").pop();
      return { ...p, triggers: [`branch:to:${node}`, p.triggers[0]].sort() };
    };
    if (mode === "tasks") return [ns, mode, fix(payload)];
    if (mode === "debug" && payload && payload.type === "task") return [ns, mode, { ...payload, payload: fix(payload.payload) }];
    return [ns, mode, payload];
  });
  return withNote(
    out,
    "Python edit: a node with a waiting edge keeps its branch:to:<node> trigger beside the join channel (graph/state.py attach_edge appends to it; _algo.py sorts the triggers); LangGraph.js lists the join channel alone.",
  );
}

// emptyUpdateIsNull: a task that wrote no output channel streams
// {node: None} in Python (_io.py map_output_updates); LangGraph.js sends
// {node: {}} for a node that returned an empty object.
export function emptyUpdateIsNull(rec) {
  const out = walkParts(rec, ([ns, mode, payload]) => {
    if (mode !== "updates" || !payload || typeof payload !== "object") return [ns, mode, payload];
    const fixed = {};
    for (const [k, v] of Object.entries(payload)) {
      fixed[k] = v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0 && k !== "__metadata__" ? null : v;
    }
    return [ns, mode, fixed];
  });
  return withNote(
    out,
    "Python edit: a node that writes no state key streams {node: None} (_io.py map_output_updates); LangGraph.js sends {node: {}} for an empty returned object.",
  );
}
