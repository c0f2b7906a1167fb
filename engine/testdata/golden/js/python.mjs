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
    for (const [ns, mode, payload] of step.parts) {
      const key = JSON.stringify(ns);
      if (mode !== "values" || payload === null || typeof payload !== "object" || !("__interrupt__" in payload)) {
        if (mode === "values") last[key] = payload;
        parts.push([ns, mode, payload]);
        continue;
      }
      if (payload.__interrupt__.length === 0) continue;
      if (!(key in last)) throw new Error(`${rec.name}: no values part before the interrupt in ${key}`);
      parts.push([ns, mode, { ...last[key], __interrupt__: payload.__interrupt__ }]);
    }
    return { ...step, parts };
  });
  return withNote(
    { ...rec, steps },
    "Python edit: LangGraph.js streams a dynamic interrupt's values part as {__interrupt__} alone and a breakpoint's as {__interrupt__: []}; Python streams the current state plus __interrupt__, and nothing at a breakpoint (_loop.py output_writes, _suppress_interrupt).",
  );
}
