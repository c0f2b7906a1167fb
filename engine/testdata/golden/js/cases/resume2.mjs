// More cases on stopping and continuing (issue 13, second batch): retries
// by the default retry_on, breakpoints after and before every node,
// several interrupts in one node, interrupt loops, ambiguous resumes, a
// new input to an interrupted thread, Send dedupe on resume, the debug
// stream of an interrupt and interrupts inside nested subgraphs.
import { Annotation, START, Send, StateGraph, interrupt } from "@langchain/langgraph";
import { ambiguousResume, interruptValues, noAbortErrors, pushPaths } from "../python.mjs";

const count = (calls, name) => {
  calls[name] = (calls[name] ?? 0) + 1;
};

const LogState = Annotation.Root({
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

const logNode = (calls, name) => () => {
  count(calls, name);
  return { log: [name] };
};

const askNode = (calls, name) => () => {
  count(calls, name);
  const answer = interrupt({ question: name });
  return { log: [`${name}:${answer}`] };
};

// httpError is an error carrying an HTTP status, as client libraries throw.
const httpError = (message, status) => Object.assign(new Error(message), { status });

const chain = (calls, names) => {
  const g = new StateGraph(LogState);
  for (const n of names) g.addNode(n, logNode(calls, n));
  g.addEdge(START, names[0]);
  for (let i = 1; i < names.length; i++) g.addEdge(names[i - 1], names[i]);
  return g;
};

// keepNullWrites: a Command(resume, update) stores the update as a write
// of the null task on the interrupted checkpoint. Python applies it on
// every run from that checkpoint (_loop.py _first, "apply NULL writes"),
// so a second resume still sees it (test_pregel.py
// test_interrupt_multiple: "DE foofoo " then "DE foofoo answer 1 answer
// 2"); LangGraph.js drops it on the second resume. The edit puts the
// update's entries back into the log of the values parts of step `at`,
// right after the entries of the input.
function keepNullWrites(at, inputLen, added) {
  return (rec) => {
    const steps = rec.steps.map((step, i) => {
      if (i !== at) return step;
      const parts = step.parts.map(([ns, mode, p, stepNo]) => {
        if (mode !== "values" || ns.length !== 0) return [ns, mode, p, stepNo];
        return [ns, mode, { ...p, log: [...p.log.slice(0, inputLen), ...added, ...p.log.slice(inputLen)] }, stepNo];
      });
      return { ...step, parts };
    });
    const note =
      "Python edit: the first resume's Command update (a null-task write on the interrupted checkpoint) is applied again on the second resume in Python (test_pregel.py test_interrupt_multiple); LangGraph.js drops it there, so the last stream's values parts are given with it.";
    return { ...rec, steps, note: rec.note ? `${rec.note} ${note}` : note };
  };
}

export default [
  {
    name: "retry_transient_then_ok",
    description: "flaky fails once with an HTTP 503 error (retryable by the default retry_on), then succeeds: one run, two calls, one update.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode(
          "flaky",
          () => {
            count(calls, "flaky");
            if (calls.flaky === 1) throw httpError("service unavailable", 503);
            return { log: ["flaky"] };
          },
          { retryPolicy: { maxAttempts: 3, initialInterval: 1, jitter: false } },
        )
        .addEdge(START, "flaky")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "tasks"] }, { op: "history" }, { op: "calls" }],
  },
  {
    name: "retry_permanent_error_recorded",
    python: noAbortErrors,
    description: "START→ok and START→bad; bad fails with an HTTP 400 error, which the default retry_on does not retry (max 3 attempts): one call, the run fails, ok's write and bad's error are kept at the checkpoint.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("ok", logNode(calls, "ok"))
        .addNode(
          "bad",
          () => {
            count(calls, "bad");
            throw httpError("bad request", 400);
          },
          { retryPolicy: { maxAttempts: 3, initialInterval: 1, jitter: false } },
        )
        .addEdge(START, "ok")
        .addEdge(START, "bad")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "checkpoints"] },
      { op: "get_state" },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "interrupt_after_breakpoint",
    python: interruptValues,
    description: "interrupt_after=[a] on START→a→b: the run stops after a with next b; a nil run runs b only.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b"]).compile({ checkpointer, interruptAfter: ["a"] }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "checkpoints"] },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "interrupt_before_all",
    python: interruptValues,
    description: 'interrupt_before="*" on START→a→b: the run stops before a, a nil run before b, another nil run finishes.',
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b"]).compile({ checkpointer, interruptBefore: "*" }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates"] },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates"] },
      { op: "calls" },
    ],
  },
  {
    name: "two_interrupts_one_node",
    python: (rec) => keepNullWrites(3, 1, ["foo"])(interruptValues(rec)),
    description: "ask calls interrupt({value:1}) then interrupt({value:2}); Command(resume, update) answers the first and brings the second; a second resume finishes with both answers.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("ask", () => {
          count(calls, "ask");
          const one = interrupt({ value: 1 });
          const two = interrupt({ value: 2 });
          return { log: [`${one}+${two}`] };
        })
        .addEdge(START, "ask")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] },
      { op: "stream", command: { resume: "answer 1", update: { log: ["foo"] } }, modes: ["values", "updates"] },
      { op: "get_state" },
      { op: "stream", command: { resume: "answer 2" }, modes: ["values", "updates"] },
      { op: "calls" },
    ],
  },
  {
    name: "interrupt_loop",
    description: 'ask asks for an age until it gets one of at least 18: resumes "13", "15", "19" bring "invalid response" twice, then ask\'s update.',
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("ask", () => {
          count(calls, "ask");
          let prompt = "age?";
          for (;;) {
            const age = interrupt(prompt);
            if (Number(age) >= 18) return { log: [`age:${age}`] };
            prompt = "invalid response";
          }
        })
        .addEdge(START, "ask")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["updates"] },
      { op: "stream", command: { resume: "13" }, modes: ["updates"] },
      { op: "stream", command: { resume: "15" }, modes: ["updates"] },
      { op: "stream", command: { resume: "19" }, modes: ["updates"] },
      { op: "get_state" },
      { op: "calls" },
    ],
  },
  {
    name: "ambiguous_scalar_resume",
    python: ambiguousResume(0, "x", ["updates"]),
    description: "Two parallel interrupts: a scalar Command(resume) is refused (which interrupt?) and changes nothing; a resume map then answers both.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("left", askNode(calls, "left"))
        .addNode("right", askNode(calls, "right"))
        .addEdge(START, "left")
        .addEdge(START, "right")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["updates"] },
      { op: "get_state" },
      {
        op: "stream",
        command: { resume_map: { 'interrupt:{"question":"left"}': "L", 'interrupt:{"question":"right"}': "R" } },
        modes: ["updates"],
      },
      { op: "calls" },
    ],
  },
  {
    name: "node_before_interrupt_not_rerun",
    description: "setup→ask where ask interrupts once per topic (t1, t2): each resume re-runs ask from the top, never setup; the answers are kept in order.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("setup", logNode(calls, "setup"))
        .addNode("ask", () => {
          count(calls, "ask");
          const answers = [];
          for (const topic of ["t1", "t2"]) answers.push(interrupt({ topic }));
          return { log: answers };
        })
        .addEdge(START, "setup")
        .addEdge("setup", "ask")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["updates"] },
      { op: "stream", command: { resume: "answer1" }, modes: ["updates"] },
      { op: "stream", command: { resume: "answer2" }, modes: ["updates"] },
      { op: "get_state" },
      { op: "calls" },
    ],
  },
  {
    name: "input_discards_pending",
    python: interruptValues,
    description: "interrupt_before=[b] on START→a→b: a second input while b is pending starts over (a runs again, b never ran); a nil run then runs b.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b"]).compile({ checkpointer, interruptBefore: ["b"] }),
    steps: [
      { op: "stream", input: { log: ["in1"] }, modes: ["values"] },
      { op: "stream", input: { log: ["in2"] }, modes: ["values"] },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "send_dedupe_on_resume",
    python: pushPaths,
    description: "plan Sends 1 and 2 to work and 3 to flaky, which interrupts: the resume runs flaky again and not the finished work tasks.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("plan", logNode(calls, "plan"))
        .addNode("work", (n) => {
          count(calls, "work");
          return { log: [`work|${n}`] };
        })
        .addNode("flaky", (n) => {
          count(calls, "flaky");
          const answer = interrupt({ question: `flaky ${n}` });
          return { log: [`flaky|${n}|${answer}`] };
        })
        .addEdge(START, "plan")
        .addConditionalEdges("plan", () => [new Send("work", 1), new Send("work", 2), new Send("flaky", 3)], ["work", "flaky"])
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["updates"] },
      { op: "get_state" },
      { op: "stream", command: { resume: "ok" }, modes: ["updates"] },
      { op: "get_state" },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "debug_stream_interrupt",
    description: "START→ask (interrupts)→done streamed in debug mode only: the checkpoint, task and task-result events of the run and of its resume.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("ask", askNode(calls, "ask"))
        .addNode("done", logNode(calls, "done"))
        .addEdge(START, "ask")
        .addEdge("ask", "done")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["debug"] },
      { op: "stream", command: { resume: "yes" }, modes: ["debug"] },
      { op: "calls" },
    ],
  },
  {
    name: "nested_subgraph_interrupt_state",
    python: interruptValues,
    description: "prep→mid→done where mid is m1→inner and inner is i1→ask (interrupts): get_state with subgraphs shows the nested states; the resume finishes all three levels.",
    build: ({ calls, checkpointer }) => {
      const inner = new StateGraph(LogState)
        .addNode("i1", logNode(calls, "i1"))
        .addNode("ask", askNode(calls, "ask"))
        .addEdge(START, "i1")
        .addEdge("i1", "ask")
        .compile();
      const mid = new StateGraph(LogState)
        .addNode("m1", logNode(calls, "m1"))
        .addNode("inner", inner)
        .addEdge(START, "m1")
        .addEdge("m1", "inner")
        .compile();
      return new StateGraph(LogState)
        .addNode("prep", logNode(calls, "prep"))
        .addNode("mid", mid)
        .addNode("done", logNode(calls, "done"))
        .addEdge(START, "prep")
        .addEdge("prep", "mid")
        .addEdge("mid", "done")
        .compile({ checkpointer });
    },
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] },
      { op: "get_state", subgraphs: true },
      { op: "stream", command: { resume: "ok" }, modes: ["values", "updates"] },
      { op: "get_state" },
      { op: "calls" },
    ],
  },
];
