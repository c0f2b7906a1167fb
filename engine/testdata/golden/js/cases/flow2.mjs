// More cases on how a run flows (issue 13, second batch): conditional
// edges, LastValue conflicts, write order, the recursion limit, Send and
// Command combinations, Overwrite, a graph without a checkpointer, custom
// stream data and nested subgraphs.
import { Annotation, Command, Overwrite, START, Send, StateGraph } from "@langchain/langgraph";
import { pushPaths } from "../python.mjs";

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

// chain builds START→names[0]→…→names[n-1] on LogState.
function chain(calls, names) {
  const g = new StateGraph(LogState);
  for (const n of names) g.addNode(n, logNode(calls, n));
  g.addEdge(START, names[0]);
  for (let i = 1; i < names.length; i++) g.addEdge(names[i - 1], names[i]);
  return g;
}

export default [
  {
    name: "cond_path_map",
    description: "a's router returns yes or no, mapped by a path map to b or c: the log has two entries, so yes→b runs and c does not.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", logNode(calls, "b"))
        .addNode("c", logNode(calls, "c"))
        .addEdge(START, "a")
        .addConditionalEdges("a", (s) => (s.log.length >= 2 ? "yes" : "no"), { yes: "b", no: "c" })
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "debug"] }, { op: "calls" }],
  },
  {
    name: "cond_route_list",
    description: "a's router returns the list [b, c]: both run in the next step (fan-out), then the run ends.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", logNode(calls, "b"))
        .addNode("c", logNode(calls, "c"))
        .addEdge(START, "a")
        .addConditionalEdges("a", () => ["b", "c"], ["b", "c"])
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "tasks"] }, { op: "history" }, { op: "calls" }],
  },
  {
    name: "lastvalue_conflict",
    description: "START→one and START→two both write the LastValue key hello in one step: InvalidUpdateError; the state stays at the input.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(Annotation.Root({ hello: Annotation() }))
        .addNode("one", () => {
          count(calls, "one");
          return { hello: "one" };
        })
        .addNode("two", () => {
          count(calls, "two");
          return { hello: "two" };
        })
        .addEdge(START, "one")
        .addEdge(START, "two")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { hello: "in" }, modes: ["values", "updates"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "parallel_append_order",
    description: "START→zeta and START→alpha (added in that order) append in one step: the log has alpha before zeta (writes applied in task path order).",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("zeta", logNode(calls, "zeta"))
        .addNode("alpha", logNode(calls, "alpha"))
        .addEdge(START, "zeta")
        .addEdge(START, "alpha")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "recursion_limit",
    description: "START→a→b→c: recursion_limit 3 fails with GraphRecursionError after three steps (thread 1); 4 passes (thread 2).",
    build: ({ calls, checkpointer }) => chain(calls, ["a", "b", "c"]).compile({ checkpointer }),
    steps: [
      { op: "stream", thread: "1", input: { log: ["in"] }, modes: ["values"], recursion_limit: 3 },
      { op: "get_state", thread: "1" },
      { op: "stream", thread: "2", input: { log: ["in"] }, modes: ["values"], recursion_limit: 4 },
      { op: "calls" },
    ],
  },
  {
    name: "send_then_cond_edge",
    description: "one Sends two tasks to two, whose router always goes to three: three runs once (two writes to its branch channel in one step trigger it once).",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("one", logNode(calls, "one"))
        .addNode("two", (arg) => {
          count(calls, "two");
          return { log: [`two|${arg.n}`] };
        })
        .addNode("three", logNode(calls, "three"))
        .addEdge(START, "one")
        .addConditionalEdges("one", () => [new Send("two", { n: 1 }), new Send("two", { n: 2 })], ["two"])
        .addConditionalEdges("two", () => "three", ["three"])
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] }, { op: "calls" }],
  },
  {
    name: "send_and_pull_write_order",
    description: "one has a plain edge to zpull and Sends two tasks to apush: in the step they share, zpull's (PULL) write comes before the Sends' (PUSH, in Send order), whatever the names.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("one", logNode(calls, "one"))
        .addNode("zpull", logNode(calls, "zpull"))
        .addNode("apush", (arg) => {
          count(calls, "apush");
          return { log: [`apush|${arg}`] };
        })
        .addEdge(START, "one")
        .addEdge("one", "zpull")
        .addConditionalEdges("one", () => [new Send("apush", "x"), new Send("apush", "y")], ["apush"])
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "tasks"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "command_send_from_send",
    python: pushPaths,
    description: "plan Sends 1 to work; work, itself a Send task, returns Command(update, goto=Send(work, n+1)) until 3: three chained PUSH tasks.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("plan", logNode(calls, "plan"))
        .addNode(
          "work",
          (n) => {
            count(calls, "work");
            if (n < 3) return new Command({ update: { log: [`work|${n}`] }, goto: new Send("work", n + 1) });
            return { log: [`work|${n}`] };
          },
          { ends: ["work"] },
        )
        .addEdge(START, "plan")
        .addConditionalEdges("plan", () => [new Send("work", 1)], ["work"])
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] }, { op: "history" }, { op: "calls" }],
  },
  {
    name: "overwrite_sequential",
    description: "START→a→b where b returns Overwrite([b]) for the appended log: the log becomes [b].",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", () => {
          count(calls, "b");
          return { log: new Overwrite(["b"]) };
        })
        .addEdge(START, "a")
        .addEdge("a", "b")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "overwrite_two_parallel_error",
    description: "b and c both return Overwrite for the log in one step: InvalidUpdateError (only one Overwrite per superstep).",
    build: ({ calls, checkpointer }) => {
      const ow = (name) => () => {
        count(calls, name);
        return { log: new Overwrite([name]) };
      };
      return new StateGraph(LogState)
        .addNode("b", ow("b"))
        .addNode("c", ow("c"))
        .addEdge(START, "b")
        .addEdge(START, "c")
        .compile({ checkpointer });
    },
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "command_update_list",
    description: "one returns Command(update=[(log, [one.0]), (log, [one.1])]): two writes to one channel from one node, both folded in order; two reads them.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("one", () => {
          count(calls, "one");
          return new Command({
            update: [
              ["log", ["one.0"]],
              ["log", ["one.1"]],
            ],
          });
        })
        .addNode("two", (s) => {
          count(calls, "two");
          return { log: [`two:${s.log.length}`] };
        })
        .addEdge(START, "one")
        .addEdge("one", "two")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "tasks"] }, { op: "calls" }],
  },
  {
    name: "no_checkpointer_values_updates",
    description: "START→a→b compiled without a checkpointer: values, updates and tasks stream as with one.",
    checkpointer: false,
    build: ({ calls }) => chain(calls, ["a", "b"]).compile(),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "tasks"] }, { op: "calls" }],
  },
  {
    name: "custom_stream",
    description: "a emits two custom payloads while it runs (config.writer; Go engine.Emit): stream mode custom gives them in order, before a's update.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", (_s, config) => {
          count(calls, "a");
          config.writer({ progress: 1 });
          config.writer({ progress: 2 });
          return { log: ["a"] };
        })
        .addEdge(START, "a")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["custom", "updates"] }, { op: "calls" }],
  },
  {
    name: "nested_subgraph_stream",
    description: "prep→mid→done where mid is m1→inner and inner is i1→i2 (a subgraph in a subgraph), streamed with subgraphs: parts of three namespaces.",
    build: ({ calls, checkpointer }) => {
      const inner = chain(calls, ["i1", "i2"]).compile();
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
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates"], subgraphs: true },
      { op: "get_state" },
      { op: "history" },
      { op: "calls" },
    ],
  },
];
