// Cases on stopping and continuing: a failure with a retried sibling,
// the node cache, breakpoints, interrupts, Command resume and subgraphs.
import { Annotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import { interruptValues } from "../python.mjs";
import { InMemoryCache } from "@langchain/langgraph-checkpoint";

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

// askNode interrupts with {question: name} and logs the answer.
const askNode = (calls, name) => () => {
  count(calls, name);
  const answer = interrupt({ question: name });
  return { log: [`${name}:${answer}`] };
};

export default [
  {
    name: "retry_pending_writes",
    description:
      "START→one and START→two on an added int; two fails twice (two attempts), so the run fails with one's write kept; the next run calls only two.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(Annotation.Root({ value: Annotation({ reducer: (a, b) => a + b, default: () => 0 }) }))
        .addNode("one", () => {
          count(calls, "one");
          return { value: 2 };
        })
        .addNode(
          "two",
          () => {
            count(calls, "two");
            if (calls.two <= 2) throw new Error("two is not ready");
            return { value: 3 };
          },
          { retryPolicy: { maxAttempts: 2, initialInterval: 1, jitter: false } },
        )
        .addEdge(START, "one")
        .addEdge(START, "two")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { value: 1 }, modes: ["values", "updates", "checkpoints"] },
      { op: "get_state" },
      { op: "get_state", checkpoint: "ckpt:root#1" },
      { op: "calls" },
      { op: "stream", input: null, modes: ["values", "updates", "checkpoints"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "cache_hit",
    description: "A cached node run twice with the same input on two threads: the second run streams __metadata__.cached and no task result.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(Annotation.Root({ word: Annotation(), meaning: Annotation() }))
        .addNode(
          "define",
          (s) => {
            count(calls, "define");
            return { meaning: s.word.toUpperCase() };
          },
          { cachePolicy: { ttl: 3600 } },
        )
        .addEdge(START, "define")
        .compile({ checkpointer, cache: new InMemoryCache() }),
    steps: [
      { op: "stream", thread: "1", input: { word: "pregel" }, modes: ["values", "updates", "tasks"] },
      { op: "stream", thread: "2", input: { word: "pregel" }, modes: ["values", "updates", "tasks"] },
      { op: "get_state", thread: "2" },
      { op: "calls" },
    ],
  },
  {
    name: "breakpoint_update_resume",
    python: interruptValues,
    description:
      "interrupt_before=[b] on START→a→b: the run stops before b; update_state (as a, inferred) appends to the log; a nil run resumes b on the edited state.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", logNode(calls, "b"))
        .addEdge(START, "a")
        .addEdge("a", "b")
        .compile({ checkpointer, interruptBefore: ["b"] }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "checkpoints"] },
      { op: "get_state" },
      { op: "update_state", values: { log: ["edited"] } },
      { op: "get_state" },
      { op: "stream", input: null, modes: ["values", "updates", "checkpoints", "debug"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "interrupt_command_resume",
    python: interruptValues,
    description: "ask interrupts with a question; Command(resume) runs ask again from the top with the answer, then done.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("ask", askNode(calls, "ask"))
        .addNode("done", logNode(calls, "done"))
        .addEdge(START, "ask")
        .addEdge("ask", "done")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "tasks", "checkpoints"] },
      { op: "get_state" },
      { op: "stream", command: { resume: "yes" }, modes: ["values", "updates", "tasks", "checkpoints"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "parallel_interrupts_resume_map",
    python: interruptValues,
    description: "Two parallel nodes interrupt with distinct questions; a resume map by interrupt answers both at once.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("left", askNode(calls, "left"))
        .addNode("right", askNode(calls, "right"))
        .addEdge(START, "left")
        .addEdge(START, "right")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] },
      { op: "get_state" },
      {
        op: "stream",
        command: { resume_map: { 'interrupt:{"question":"left"}': "L", 'interrupt:{"question":"right"}': "R" } },
        modes: ["values", "updates"],
      },
      { op: "calls" },
    ],
  },
  {
    name: "command_resume_update",
    python: interruptValues,
    description:
      "Command(resume, update) stores the update as a null-task write: the first values part, get_state and history at the interrupted checkpoint all show it.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("ask", askNode(calls, "ask"))
        .addNode("done", logNode(calls, "done"))
        .addEdge(START, "ask")
        .addEdge("ask", "done")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      {
        op: "stream",
        command: { resume: "yes", update: { log: ["added"] } },
        modes: ["values", "updates", "checkpoints"],
      },
      { op: "get_state", checkpoint: "ckpt:root#2" },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "subgraph_interrupt",
    python: interruptValues,
    description:
      "prep→child→finish where child is a compiled subgraph s1→ask (interrupts)→s2 on the same log. Thread 1 streams with subgraphs (namespaced parts), thread 2 without (root parts only).",
    build: ({ calls, checkpointer }) => {
      const child = new StateGraph(LogState)
        .addNode("s1", logNode(calls, "s1"))
        .addNode("ask", askNode(calls, "ask"))
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
      { op: "stream", thread: "1", input: { log: ["in"] }, modes: ["values", "updates", "checkpoints"], subgraphs: true },
      { op: "get_state", thread: "1", subgraphs: true },
      { op: "stream", thread: "1", command: { resume: "ok" }, modes: ["values", "updates"], subgraphs: true },
      { op: "stream", thread: "2", input: { log: ["in"] }, modes: ["values", "updates", "checkpoints"] },
      { op: "get_state", thread: "2" },
      { op: "stream", thread: "2", command: { resume: "ok" }, modes: ["values", "updates", "checkpoints"] },
      { op: "history", thread: "2" },
      { op: "calls" },
    ],
  },
];
