// More cases on update_state and time travel (issue 13, second batch):
// update_state as __end__, as __input__, with a Command, twice; forks by
// update_state and __copy__ run by checkpoint id; history of a loop and a
// replay from it; a subgraph's state across a __copy__ fork.
import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { interruptValues } from "../python.mjs";

const count = (calls, name) => {
  calls[name] = (calls[name] ?? 0) + 1;
};

const LogState = Annotation.Root({
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

const ValueState = Annotation.Root({
  value: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
});

const logNode = (calls, name) => () => {
  count(calls, name);
  return { log: [name] };
};

const chain = (calls, names) => {
  const g = new StateGraph(LogState);
  for (const n of names) g.addNode(n, logNode(calls, n));
  g.addEdge(START, names[0]);
  for (let i = 1; i < names.length; i++) g.addEdge(names[i - 1], names[i]);
  return g;
};

// subgraphCopyFork is the Python behaviour of subgraph_copy_fork where
// LangGraph.js restarts the subgraph (upstream langgraph#8458).
// LangGraph.js restarts the child subgraph on the copy: s1 runs again.
// The carried subgraph state (item 9) resumes the child at ask, so s1 is
// called once in all; the root's values are the same either way (the
// restarted child computes the same log), so only the call counts change.
function subgraphCopyFork(rec) {
  const steps = rec.steps.map((step, i) => {
    if (step.op !== "calls" || i < 3) return step;
    if (step.calls.s1 !== 2) throw new Error(`${rec.name}: expected LangGraph.js to run s1 twice, got ${step.calls.s1}`);
    return { ...step, calls: { ...step.calls, s1: 1 } };
  });
  const note =
    "Deliberate edit: LangGraph.js restarts a subgraph on a __copy__ fork, so its first node s1 runs again (the upstream bug langchain-ai/langgraph#8458); Superstep fixes it on purpose (issue 13 item 9), carrying the subgraph's state through the fork, so this file records s1 called once after the fork.";
  return { ...rec, steps, note: rec.note ? `${rec.note} ${note}` : note };
}

export default [
  {
    name: "update_state_as_end",
    python: interruptValues,
    description: "interrupt_before=[b] on START→a→b; update_state(None, as_node=__end__) marks the pending b as seen: next is empty, source update; a nil run does nothing.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b"]).compile({ checkpointer, interruptBefore: ["b"] }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", values: null, as_node: "__end__" },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "update_state_as_input",
    description: "update_state(values, as_node=__input__) on a fresh thread writes an input checkpoint (step -1, next __start__); a nil run then runs the graph on it.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b"]).compile({ checkpointer }),
    steps: [
      { op: "update_state", values: { log: ["seed"] }, as_node: "__input__" },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates", "checkpoints"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "update_state_command_as_node",
    python: interruptValues,
    description: "a routes with Command(update, goto=b), interrupt_before=[b]. Thread 1: update_state with a plain dict (as a, inferred) loses the route: next is empty. Thread 2: update_state with Command(update, goto=b) as a keeps it: next is b, and a nil run runs b.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode(
          "a",
          () => {
            count(calls, "a");
            return new Command({ update: { log: ["a"] }, goto: "b" });
          },
          { ends: ["b"] },
        )
        .addNode("b", logNode(calls, "b"))
        .addEdge(START, "a")
        .compile({ checkpointer, interruptBefore: ["b"] }),
    steps: [
      { op: "stream", thread: "1", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", thread: "1", values: { log: ["edited"] } },
      { op: "get_state", thread: "1" },
      { op: "stream", thread: "2", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", thread: "2", command: { update: { log: ["cmd"] }, goto: "b" }, as_node: "a" },
      { op: "get_state", thread: "2" },
      { op: "stream", thread: "2", input: null, modes: ["values", "updates"] },
      { op: "calls" },
    ],
  },
  {
    name: "update_state_twice",
    python: interruptValues,
    description: "interrupt_before=[b] on START→a→b; two update_states in a row (as a, then as a again): each is a new checkpoint one step on; the resume runs b once on both edits.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b"]).compile({ checkpointer, interruptBefore: ["b"] }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", values: { log: ["e1"] }, as_node: "a" },
      { op: "update_state", values: { log: ["e2"] }, as_node: "a" },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "fork_update_then_run",
    description: "START→a→b→c run to the end; two update_states on the checkpoint whose next is b (x, then y), each run from its update checkpoint by id: no fork checkpoint (item 5), b and c run on each branch, a never again.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b", "c"]).compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", checkpoint: "ckpt:root#2", values: { log: ["x"] } },
      { op: "stream", checkpoint: "ckpt:root#5", input: null, modes: ["values", "checkpoints"] },
      { op: "update_state", checkpoint: "ckpt:root#2", values: { log: ["y"] } },
      { op: "stream", checkpoint: "ckpt:root#8", input: null, modes: ["values"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "fork_skips_old_pending_writes",
    description: "a adds 10 and b 100 to value (input 1); update_state on the checkpoint before a, as a, with 20, then a run from it: 121 (a's old write of 10 is not applied).",
    build: ({ calls, checkpointer }) =>
      new StateGraph(ValueState)
        .addNode("a", () => {
          count(calls, "a");
          return { value: 10 };
        })
        .addNode("b", () => {
          count(calls, "b");
          return { value: 100 };
        })
        .addEdge(START, "a")
        .addEdge("a", "b")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { value: 1 }, modes: ["values"] },
      { op: "update_state", checkpoint: "ckpt:root#1", values: { value: 20 }, as_node: "a" },
      { op: "stream", checkpoint: "ckpt:root#4", input: null, modes: ["values", "updates"] },
      { op: "get_state" },
      { op: "calls" },
    ],
  },
  {
    name: "copy_then_run_by_id",
    description: "START→a→b→c run to the end; __copy__ of the checkpoint whose next is b, then a run from the copy by id: no second fork checkpoint (item 5); b and c run again.",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b", "c"]).compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", checkpoint: "ckpt:root#2", values: null, as_node: "__copy__" },
      { op: "stream", checkpoint: "ckpt:root#5", input: null, modes: ["values", "checkpoints"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "history_loop_replay",
    description: "add_one adds 1 to value while it is below 6 (input 1): values and updates alternate; seven history entries; replaying from the entry with value 3 runs add_one three times more.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(ValueState)
        .addNode("add_one", () => {
          count(calls, "add_one");
          return { value: 1 };
        })
        .addEdge(START, "add_one")
        .addConditionalEdges("add_one", (s) => (s.value < 6 ? "add_one" : END), ["add_one", END])
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { value: 1 }, modes: ["values", "updates"] },
      { op: "history" },
      { op: "stream", checkpoint: "ckpt:root#3", input: null, modes: ["updates"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "subgraph_copy_fork",
    python: (rec) => subgraphCopyFork(interruptValues(rec)),
    description: "prep→child→finish where child is s1→ask (interrupts)→s2; __copy__ of the interrupted checkpoint and a run from it by id: the subgraph's state is carried (s1 does not run again, item 9) and ask asks again; the resume finishes.",
    build: ({ calls, checkpointer }) => {
      const child = new StateGraph(LogState)
        .addNode("s1", logNode(calls, "s1"))
        .addNode("ask", () => {
          count(calls, "ask");
          return { log: [`ask:${interrupt({ question: "ask" })}`] };
        })
        .addNode("s2", logNode(calls, "s2"))
        .addEdge(START, "s1")
        .addEdge("s1", "ask")
        .addEdge("ask", "s2")
        .compile();
      return new StateGraph(LogState)
        .addNode("prep", logNode(calls, "prep"))
        .addNode("child", child)
        .addNode("finish", logNode(calls, "finish"))
        .addEdge(START, "prep")
        .addEdge("prep", "child")
        .addEdge("child", "finish")
        .compile({ checkpointer });
    },
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "calls" },
      { op: "update_state", checkpoint: "ckpt:root#2", values: null, as_node: "__copy__" },
      { op: "stream", checkpoint: "ckpt:root#3", input: null, modes: ["values"] },
      { op: "calls" },
      { op: "stream", command: { resume: "ok" }, modes: ["values"] },
      { op: "get_state" },
      { op: "calls" },
    ],
  },
];
