package engine_test

// The Go builders of the golden cases: one per testdata/golden/<case>.json,
// building the graph its LangGraph.js case (testdata/golden/js/cases/*.mjs)
// builds, with the same node names, state keys and writes, counting node
// calls the same way. To add a case: write the JS case object, record it
// (make golden/record CASES=<name>), and add a builder here under the same
// name.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

var goldenBuilders = map[string]func(*testing.T, *goldenCalls) goldenGraph{
	"chain_values_updates":           goldenChain,
	"fanin_plain_edges":              goldenFanIn("plain"),
	"fanin_waiting_edge":             goldenFanIn("waiting"),
	"fanin_defer":                    goldenFanIn("defer"),
	"send_map_reduce":                goldenSendMapReduce,
	"command_goto_update":            goldenCommandGoto,
	"overwrite_parallel":             goldenOverwriteParallel,
	"no_checkpointer_stream":         goldenNoCheckpointer,
	"pregel_single_output":           goldenPregelDoubled(nil),
	"pregel_stream_channel_string":   goldenPregelDoubled([]string{"doubled"}),
	"retry_pending_writes":           goldenRetryPendingWrites,
	"cache_hit":                      goldenCacheHit,
	"breakpoint_update_resume":       goldenBreakpoint,
	"interrupt_command_resume":       goldenAskDone,
	"command_resume_update":          goldenAskDone,
	"parallel_interrupts_resume_map": goldenParallelInterrupts,
	"subgraph_interrupt":             goldenSubgraphInterrupt,
	"replay_from_history":            goldenReplay,
	"copy_fork_interrupt":            goldenCopyFork,
}

// goldenLog appends name to the log, as the JS cases' logNode.
func goldenLog(calls *goldenCalls, name string) func(context.Context, logState) (engine.Output, error) {
	return func(context.Context, logState) (engine.Output, error) {
		calls.add(name)
		return engine.Update{"log": []string{name}}, nil
	}
}

// goldenAsk interrupts with {question: name} and logs "name:answer", as
// the JS cases' askNode.
func goldenAsk(calls *goldenCalls, name string) func(context.Context, logState) (engine.Output, error) {
	return func(ctx context.Context, _ logState) (engine.Output, error) {
		calls.add(name)
		answer, err := engine.Interrupt(ctx, map[string]any{"question": name})
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": []string{name + ":" + answerText(answer)}}, nil
	}
}

// answerText is a resume answer as the JS cases print it (`${answer}`);
// the cases answer with strings.
func answerText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func goldenCompile[S any](t *testing.T, g *engine.StateGraph[S], opts engine.CompileOptions) goldenGraph {
	t.Helper()
	saver := checkpoints.NewMemory()
	opts.Checkpointer = saver
	return goldenGraph{graph: mustCompile(t, g, opts), saver: saver}
}

type goldenChainState struct {
	Log  []string `json:"log" reduce:"append"`
	Last string   `json:"last"`
}

func goldenChain(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenChainState]()
	for _, n := range []string{"a", "b"} {
		g.AddNode(n, func(context.Context, goldenChainState) (engine.Output, error) {
			calls.add(n)
			return engine.Update{"log": []string{n}, "last": n}, nil
		})
	}
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenFanIn(join string) func(*testing.T, *goldenCalls) goldenGraph {
	return func(t *testing.T, calls *goldenCalls) goldenGraph {
		g := engine.NewStateGraph[logState]()
		g.AddNode("a", goldenLog(calls, "a")).AddNode("b1", goldenLog(calls, "b1")).AddNode("b2", goldenLog(calls, "b2"))
		if join == "defer" {
			g.AddNode("c", goldenLog(calls, "c"), engine.Defer())
		} else {
			g.AddNode("c", goldenLog(calls, "c"))
		}
		g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b1").AddEdge("b1", "b2")
		if join == "waiting" {
			g.AddJoin([]string{"a", "b2"}, "c")
		} else {
			g.AddEdge("a", "c").AddEdge("b2", "c")
		}
		return goldenCompile(t, g, engine.CompileOptions{})
	}
}

type goldenSendState struct {
	Topics  []string `json:"topics"`
	Results []string `json:"results" reduce:"append"`
	Total   int      `json:"total"`
}

type goldenTopic struct {
	Topic string `json:"topic"`
}

func goldenSendMapReduce(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenSendState]()
	g.AddNode("plan", func(context.Context, goldenSendState) (engine.Output, error) {
		calls.add("plan")
		return engine.Update{}, nil
	}, engine.SendTargets("work"))
	engine.AddNodeFunc(g, "work", func(_ context.Context, in goldenTopic) (engine.Output, error) {
		calls.add("work")
		return engine.Update{"results": []string{in.Topic + "!"}}, nil
	})
	g.AddNode("sum", func(_ context.Context, s goldenSendState) (engine.Output, error) {
		calls.add("sum")
		return engine.Update{"total": len(s.Results)}, nil
	})
	g.AddEdge(engine.Start, "plan")
	g.AddConditionalEdges("plan", func(_ context.Context, s goldenSendState) (engine.Route, error) {
		sends := make([]engine.Send, len(s.Topics))
		for i, topic := range s.Topics {
			sends[i] = engine.Send{Node: "work", Arg: goldenTopic{Topic: topic}}
		}
		return engine.SendTo(sends...), nil
	}, nil)
	g.AddEdge("work", "sum")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenCommandGoto(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", func(context.Context, logState) (engine.Output, error) {
		calls.add("a")
		return engine.Command{Update: engine.Update{"log": []string{"a"}}, Goto: []any{"c"}}, nil
	}, engine.Destinations("b", "c"))
	g.AddNode("b", goldenLog(calls, "b")).AddNode("c", goldenLog(calls, "c"))
	g.AddEdge(engine.Start, "a")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenOverwriteParallel(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a"))
	g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
		calls.add("b")
		return engine.Update{"log": engine.Overwrite{Value: []string{"b"}}}, nil
	})
	g.AddNode("c", goldenLog(calls, "c")).AddNode("d", goldenLog(calls, "d"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("a", "c").AddJoin([]string{"b", "c"}, "d")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenNoCheckpointer(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a")).AddNode("b", goldenLog(calls, "b"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	return goldenGraph{graph: mustCompile(t, g, engine.CompileOptions{})}
}

// goldenPregelDoubled is the low-level graph of the pregel_* cases: one
// reads input and writes its double to doubled and side; the output is
// doubled; stream gives StreamChannels (nil: unset; one name: the graph
// streams that channel's raw value, goldenGraph.streamChannel).
func goldenPregelDoubled(stream []string) func(*testing.T, *goldenCalls) goldenGraph {
	return func(t *testing.T, calls *goldenCalls) goldenGraph {
		one := mustNode(t, "one", engine.NewNode().
			SubscribeOnly("input").
			Do(func(_ context.Context, in any) (any, error) {
				calls.add("one")
				return in.(int) * 2, nil
			}).
			WriteTo("doubled", "side"))
		saver := checkpoints.NewMemory()
		p := mustPregel(t, engine.PregelConfig{
			Channels: map[string]channels.Channel{
				"input":   channels.NewEphemeralValue(reflect.TypeFor[int](), false),
				"doubled": channels.NewLastValue(reflect.TypeFor[int]()),
				"side":    channels.NewLastValue(reflect.TypeFor[int]()),
			},
			Nodes:          []*engine.Node{one},
			InputChannels:  []string{"input"},
			OutputChannels: []string{"doubled"},
			StreamChannels: stream,
			Checkpointer:   saver,
		})
		gg := goldenGraph{graph: p, saver: saver, input: func(v any) any {
			if f, ok := v.(float64); ok {
				return int(f)
			}
			return v
		}}
		if len(stream) == 1 {
			gg.streamChannel = stream[0]
		}
		return gg
	}
}

type goldenValueState struct {
	Value int `json:"value" reduce:"add"`
}

func goldenRetryPendingWrites(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenValueState]()
	g.AddNode("one", func(context.Context, goldenValueState) (engine.Output, error) {
		calls.add("one")
		return engine.Update{"value": 2}, nil
	})
	g.AddNode("two", func(context.Context, goldenValueState) (engine.Output, error) {
		if calls.add("two") <= 2 {
			return nil, errors.New("two is not ready")
		}
		return engine.Update{"value": 3}, nil
	}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond}))
	g.AddEdge(engine.Start, "one").AddEdge(engine.Start, "two")
	return goldenCompile(t, g, engine.CompileOptions{})
}

type goldenWordState struct {
	Word    string `json:"word"`
	Meaning string `json:"meaning"`
}

func goldenCacheHit(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[goldenWordState]()
	g.AddNode("define", func(_ context.Context, s goldenWordState) (engine.Output, error) {
		calls.add("define")
		return engine.Update{"meaning": strings.ToUpper(s.Word)}, nil
	}, engine.WithCache(engine.CachePolicy{TTL: time.Hour}))
	g.AddEdge(engine.Start, "define")
	return goldenCompile(t, g, engine.CompileOptions{Cache: cache.NewMemory(nil)})
}

func goldenBreakpoint(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a")).AddNode("b", goldenLog(calls, "b"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	return goldenCompile(t, g, engine.CompileOptions{InterruptBefore: []string{"b"}})
}

// goldenAskDone is START→ask (interrupts)→done.
func goldenAskDone(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("ask", goldenAsk(calls, "ask")).AddNode("done", goldenLog(calls, "done"))
	g.AddEdge(engine.Start, "ask").AddEdge("ask", "done")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenParallelInterrupts(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("left", goldenAsk(calls, "left")).AddNode("right", goldenAsk(calls, "right"))
	g.AddEdge(engine.Start, "left").AddEdge(engine.Start, "right")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenSubgraphInterrupt(t *testing.T, calls *goldenCalls) goldenGraph {
	child := engine.NewStateGraph[logState]()
	child.AddNode("s1", goldenLog(calls, "s1")).AddNode("ask", goldenAsk(calls, "ask")).AddNode("s2", goldenLog(calls, "s2"))
	child.AddEdge(engine.Start, "s1").AddEdge("s1", "ask").AddEdge("ask", "s2")
	sub := mustCompile(t, child, engine.CompileOptions{})
	g := engine.NewStateGraph[logState]()
	g.AddNode("prep", goldenLog(calls, "prep")).AddSubgraph("child", sub).AddNode("finish", goldenLog(calls, "finish"))
	g.AddEdge(engine.Start, "prep").AddEdge("prep", "child").AddEdge("child", "finish")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenReplay(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a")).AddNode("b", goldenLog(calls, "b")).AddNode("c", goldenLog(calls, "c"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", "c")
	return goldenCompile(t, g, engine.CompileOptions{})
}

func goldenCopyFork(t *testing.T, calls *goldenCalls) goldenGraph {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", goldenLog(calls, "a")).AddNode("ask", goldenAsk(calls, "ask"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "ask")
	return goldenCompile(t, g, engine.CompileOptions{})
}
