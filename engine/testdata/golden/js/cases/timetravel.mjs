// Cases on time travel: replay from an earlier checkpoint and the
// __copy__ fork.
import { Annotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import { interruptValues } from "../python.mjs";

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

export default [
  {
    name: "replay_from_history",
    description:
      "START→a→b→c run to the end, then replayed from the history entry whose next is b: a fork checkpoint is written, b and c run again, a does not.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", logNode(calls, "b"))
        .addNode("c", logNode(calls, "c"))
        .addEdge(START, "a")
        .addEdge("a", "b")
        .addEdge("b", "c")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "history" },
      { op: "stream", checkpoint: "ckpt:root#2", input: null, modes: ["values", "updates", "checkpoints", "debug"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "copy_fork_interrupt",
    python: interruptValues,
    description:
      "ask interrupts; update_state(None, as_node=__copy__) forks the interrupted checkpoint as a sibling (source fork); running from the copy asks again; resuming it finishes.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("ask", () => {
          count(calls, "ask");
          return { log: [`ask:${interrupt({ question: "ask" })}`] };
        })
        .addEdge(START, "a")
        .addEdge("a", "ask")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values"] },
      { op: "update_state", checkpoint: "ckpt:root#2", values: null, as_node: "__copy__" },
      { op: "get_state" },
      { op: "stream", checkpoint: "ckpt:root#3", input: null, modes: ["values", "updates", "checkpoints"] },
      { op: "stream", command: { resume: "copied" }, modes: ["values", "updates", "checkpoints"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
];
