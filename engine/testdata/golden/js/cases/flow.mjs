// Cases on how a run flows: chains, fan-in, Send, Command, Overwrite, the
// low-level Pregel API and a graph without a checkpointer. Each case's
// build counts its node calls in `calls`; engine/golden_graphs_test.go
// builds the same graph in Go under the same case name.
import { Annotation, Command, END, Overwrite, START, Send, StateGraph } from "@langchain/langgraph";
import { emptyUpdateIsNull, joinTriggers } from "../python.mjs";
import { Channel, Pregel } from "@langchain/langgraph/pregel";
import { EphemeralValue, LastValue } from "@langchain/langgraph/channels";

const count = (calls, name) => {
  calls[name] = (calls[name] ?? 0) + 1;
};

// LogState: a list every node appends to.
const LogState = Annotation.Root({
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

const logNode = (calls, name) => () => {
  count(calls, name);
  return { log: [name] };
};

const all = ["values", "updates", "tasks", "checkpoints", "debug"];

// unevenFanIn: START→a→c and START→b1→b2→c, c joined as `join` says.
function unevenFanIn(join) {
  return ({ calls, checkpointer }) => {
    const g = new StateGraph(LogState)
      .addNode("a", logNode(calls, "a"))
      .addNode("b1", logNode(calls, "b1"))
      .addNode("b2", logNode(calls, "b2"))
      .addNode("c", logNode(calls, "c"), join === "defer" ? { defer: true } : {})
      .addEdge(START, "a")
      .addEdge(START, "b1")
      .addEdge("b1", "b2");
    if (join === "waiting") g.addEdge(["a", "b2"], "c");
    else g.addEdge("a", "c").addEdge("b2", "c");
    return g.compile({ checkpointer });
  };
}

export default [
  {
    name: "chain_values_updates",
    description: "START→a→b on an appended log and a plain key: every stream mode, the state and history after.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(
        Annotation.Root({
          log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
          last: Annotation(),
        }),
      )
        .addNode("a", () => {
          count(calls, "a");
          return { log: ["a"], last: "a" };
        })
        .addNode("b", () => {
          count(calls, "b");
          return { log: ["b"], last: "b" };
        })
        .addEdge(START, "a")
        .addEdge("a", "b")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: all },
      { op: "get_state" },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "fanin_plain_edges",
    description: "START→a→c and START→b1→b2→c with plain edges: c runs once per arrival (twice).",
    build: unevenFanIn("plain"),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] }, { op: "calls" }],
  },
  {
    name: "fanin_waiting_edge",
    description: "The uneven fan-in with a waiting edge [a, b2]→c: c runs once, after both.",
    build: unevenFanIn("waiting"),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "tasks"] }, { op: "history" }, { op: "calls" }],
    python: joinTriggers,
  },
  {
    name: "fanin_defer",
    description: "The uneven fan-in with c deferred: c runs once, when nothing else is left.",
    build: unevenFanIn("defer"),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "debug"] }, { op: "calls" }],
  },
  {
    name: "send_map_reduce",
    python: emptyUpdateIsNull,
    description: "plan Sends one task per topic to work; the results are appended and sum reads them all.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(
        Annotation.Root({
          topics: Annotation(),
          results: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
          total: Annotation(),
        }),
      )
        .addNode("plan", () => {
          count(calls, "plan");
          return {};
        })
        .addNode("work", (arg) => {
          count(calls, "work");
          return { results: [`${arg.topic}!`] };
        })
        .addNode("sum", (s) => {
          count(calls, "sum");
          return { total: s.results.length };
        })
        .addEdge(START, "plan")
        .addConditionalEdges("plan", (s) => s.topics.map((t) => new Send("work", { topic: t })), ["work"])
        .addEdge("work", "sum")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { topics: ["x", "y", "z"] }, modes: ["values", "updates", "tasks", "checkpoints"] },
      { op: "get_state" },
      { op: "calls" },
    ],
  },
  {
    name: "command_goto_update",
    description: "a returns Command(update, goto=c), skipping b; c's router-free edge ends the run.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode(
          "a",
          () => {
            count(calls, "a");
            return new Command({ update: { log: ["a"] }, goto: "c" });
          },
          { ends: ["b", "c"] },
        )
        .addNode("b", logNode(calls, "b"))
        .addNode("c", logNode(calls, "c"))
        .addEdge(START, "a")
        .compile({ checkpointer }),
    steps: [
      { op: "stream", input: { log: ["in"] }, modes: ["values", "updates", "checkpoints"] },
      { op: "history" },
      { op: "calls" },
    ],
  },
  {
    name: "overwrite_parallel",
    description: "b overwrites the appended log while its sibling c appends in the same step; d appends after.",
    build: ({ calls, checkpointer }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", () => {
          count(calls, "b");
          return { log: new Overwrite(["b"]) };
        })
        .addNode("c", logNode(calls, "c"))
        .addNode("d", logNode(calls, "d"))
        .addEdge(START, "a")
        .addEdge("a", "b")
        .addEdge("a", "c")
        .addEdge(["b", "c"], "d")
        .compile({ checkpointer }),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "updates"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "no_checkpointer_stream",
    description: "A graph compiled without a checkpointer streams no checkpoints and no debug checkpoint events.",
    checkpointer: false,
    build: ({ calls }) =>
      new StateGraph(LogState)
        .addNode("a", logNode(calls, "a"))
        .addNode("b", logNode(calls, "b"))
        .addEdge(START, "a")
        .addEdge("a", "b")
        .compile(),
    steps: [{ op: "stream", input: { log: ["in"] }, modes: ["values", "checkpoints", "debug"] }, { op: "calls" }],
  },
  {
    name: "pregel_single_output",
    description:
      "Low-level Pregel: one reads input and writes doubled and side; output_channels is the one name doubled, stream_channels unset.",
    note:
      "Python's stream() defaults output_keys to stream_channels_asis, which is every channel when stream_channels is unset (main.py, stream: `if output_keys is None: output_keys = self.stream_channels_asis`); only invoke() uses output_channels. So values and updates are maps of all channels here, as LangGraph.js records; raw values need stream_channels given as one name (pregel_stream_channel_string).",
    build: ({ calls, checkpointer }) =>
      new Pregel({
        nodes: {
          one: Channel.subscribeTo("input")
            .pipe((x) => {
              count(calls, "one");
              return x * 2;
            })
            .pipe(Channel.writeTo(["doubled", "side"])),
        },
        channels: { input: new EphemeralValue(), doubled: new LastValue(), side: new LastValue() },
        inputChannels: "input",
        outputChannels: "doubled",
        checkpointer,
      }),
    steps: [{ op: "stream", input: 21, modes: ["values", "updates"] }, { op: "get_state" }, { op: "calls" }],
  },
  {
    name: "pregel_stream_channel_string",
    description:
      "Low-level Pregel as pregel_single_output, with stream_channels the one name doubled: values and updates are raw values, side is not streamed.",
    build: ({ calls, checkpointer }) =>
      new Pregel({
        nodes: {
          one: Channel.subscribeTo("input")
            .pipe((x) => {
              count(calls, "one");
              return x * 2;
            })
            .pipe(Channel.writeTo(["doubled", "side"])),
        },
        channels: { input: new EphemeralValue(), doubled: new LastValue(), side: new LastValue() },
        inputChannels: "input",
        outputChannels: "doubled",
        streamChannels: "doubled",
        checkpointer,
      }),
    steps: [{ op: "stream", input: 21, modes: ["values", "updates"] }, { op: "get_state" }, { op: "calls" }],
  },
];
