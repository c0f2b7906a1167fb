package enginetest

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func init() {
	register("7 input to an interrupted thread discards pending tasks", interruptBeforeAndResume)
	register("18 two interrupts in one node/scalar resume", func(t *testing.T, s checkpoints.Saver) { twoInterruptsInOneNode(t, s, false) })
	register("18 two interrupts in one node/resume by id", func(t *testing.T, s checkpoints.Saver) { twoInterruptsInOneNode(t, s, true) })
	register("19 interrupt loop", interruptLoop)
	register("20 ambiguous scalar resume", ambiguousScalarResume)
	register("24 node before interrupt is not re-run/one node", func(t *testing.T, s checkpoints.Saver) { nodeBeforeInterrupt(t, s, 1) })
	register("24 node before interrupt is not re-run/two nodes", func(t *testing.T, s checkpoints.Saver) { nodeBeforeInterrupt(t, s, 2) })
	register("x bank transfer approval", bankTransferApproval)
}

// Reference §11 case 7: with a breakpoint before b, new input discards the
// pending task; resuming with no input then runs b. The history's sources
// and steps are upstream's.
func interruptBeforeAndResume(t *testing.T, saver checkpoints.Saver) {
	g := engine.NewStateGraph[logState]()
	g.AddNode("a", logNode("a")).AddNode("b", logNode("b"))
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver, InterruptBefore: []string{"b"}})
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th}
	st, err := cg.Invoke(ctx(), engine.Update{"log": "in1"}, opts)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || !reflect.DeepEqual(intr.Before, []string{"b"}) || !reflect.DeepEqual(st.Log, []string{"in1", "a"}) {
		t.Fatalf("first run: %v, %v", st, err)
	}
	// Reference §11 case 7: new input discards the pending task.
	st, err = cg.Invoke(ctx(), engine.Update{"log": "in2"}, opts)
	if !errors.Is(err, engine.ErrInterrupted) || !reflect.DeepEqual(st.Log, []string{"in1", "a", "in2", "a"}) {
		t.Fatalf("second input: %v, %v", st.Log, err)
	}
	st, err = cg.Invoke(ctx(), nil, opts)
	if err != nil || !reflect.DeepEqual(st.Log, []string{"in1", "a", "in2", "a", "b"}) {
		t.Fatalf("resume: %v, %v", st.Log, err)
	}
	hist := history(t, saver, th)
	var sources []string
	for i := len(hist) - 1; i >= 0; i-- {
		sources = append(sources, string(hist[i].Metadata.Source)+"("+strconv.Itoa(hist[i].Metadata.Step)+")")
	}
	want := []string{"input(-1)", "loop(0)", "loop(1)", "input(2)", "loop(3)", "loop(4)", "loop(5)"}
	if !reflect.DeepEqual(sources, want) {
		t.Fatalf("history = %v, want %v", sources, want)
	}
}

// Reference §11 case 18, with our fix: the two interrupts of one node have
// distinct ids, answered one at a time, each resume re-running the node.
func twoInterruptsInOneNode(t *testing.T, saver checkpoints.Saver, byID bool) {
	var calls atomic.Int32
	g := engine.NewStateGraph[strState]()
	g.AddNode("node", func(ctx context.Context, s strState) (engine.Output, error) {
		calls.Add(1)
		a1, err := engine.Interrupt(ctx, map[string]any{"value": 1})
		if err != nil {
			return nil, err
		}
		a2, err := engine.Interrupt(ctx, map[string]any{"value": 2})
		if err != nil {
			return nil, err
		}
		return engine.Update{"my_key": " " + a1.(string) + " " + a2.(string)}, nil
	})
	g.AddEdge(engine.Start, "node")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	opts := &engine.RunOptions{ThreadID: thread(t, "1")}
	_, err := cg.Invoke(ctx(), engine.Update{"my_key": "DE"}, opts)
	first := interrupted(t, err).Interrupts
	if len(first) != 1 || !reflect.DeepEqual(first[0].Value, map[string]any{"value": 1}) || first[0].Node != "node" {
		t.Fatalf("first interrupts = %+v", first)
	}
	var resume any = "answer 1"
	if byID {
		resume = map[string]any{first[0].ID: "answer 1"}
	}
	_, err = cg.Invoke(ctx(), engine.Command{Resume: resume, Update: engine.Update{"my_key": " foofoo "}}, opts)
	second := interrupted(t, err).Interrupts
	if len(second) != 1 || !reflect.DeepEqual(second[0].Value, map[string]any{"value": 2}) {
		t.Fatalf("second interrupts = %+v", second)
	}
	if second[0].ID == first[0].ID {
		t.Fatalf("both interrupts of one node share id %s (upstream's bug)", first[0].ID)
	}
	resume = "answer 2"
	if byID {
		resume = map[string]any{second[0].ID: "answer 2"}
	}
	out, err := cg.Invoke(ctx(), engine.Command{Resume: resume}, opts)
	if err != nil || out.MyKey != "DE foofoo  answer 1 answer 2" {
		t.Fatalf("byID=%v: final = %q, %v", byID, out.MyKey, err)
	}
	if calls.Load() != 3 {
		t.Fatalf("node ran %d times, want 3 (once per resume, from the top)", calls.Load())
	}
}

// Reference §11 case 19: a node asks until the answer is valid.
func interruptLoop(t *testing.T, saver checkpoints.Saver) {
	g := engine.NewStateGraph[ageState]()
	g.AddNode("node", func(ctx context.Context, s ageState) (engine.Output, error) {
		question := "how old are you?"
		for {
			a, err := engine.Interrupt(ctx, question)
			if err != nil {
				return nil, err
			}
			if n, _ := strconv.Atoi(a.(string)); n >= 18 {
				return engine.Update{"age": n}, nil
			}
			question = "invalid response"
		}
	})
	g.AddEdge(engine.Start, "node")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	opts := &engine.RunOptions{ThreadID: thread(t, "1")}
	_, err := cg.Invoke(ctx(), engine.Update{"age": 0}, opts)
	if v := interrupted(t, err).Interrupts[0].Value; v != "how old are you?" {
		t.Fatalf("first question %v", v)
	}
	for _, a := range []string{"13", "15"} {
		_, err = cg.Invoke(ctx(), engine.Command{Resume: a}, opts)
		if v := interrupted(t, err).Interrupts[0].Value; v != "invalid response" {
			t.Fatalf("after %s: %v", a, v)
		}
	}
	out, err := cg.Invoke(ctx(), engine.Command{Resume: "19"}, opts)
	if err != nil || out.Age != 19 {
		t.Fatalf("final %+v %v", out, err)
	}
}

// Reference §11 case 20: with two pending interrupts a single resume value
// is ambiguous; a map by id answers both.
func ambiguousScalarResume(t *testing.T, saver checkpoints.Saver) {
	g := engine.NewStateGraph[pairState]()
	for _, k := range []string{"a", "b"} {
		g.AddNode("ask_"+k, func(ctx context.Context, s pairState) (engine.Output, error) {
			v, err := engine.Interrupt(ctx, "value for "+k)
			if err != nil {
				return nil, err
			}
			return engine.Update{k: v}, nil
		})
		g.AddEdge(engine.Start, "ask_"+k)
	}
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	th := thread(t, "1")
	opts := &engine.RunOptions{ThreadID: th}
	_, err := cg.Invoke(ctx(), engine.Update{"a": ""}, opts)
	is := interrupted(t, err).Interrupts
	if len(is) != 2 {
		t.Fatalf("interrupts %+v", is)
	}
	if _, err := cg.Invoke(ctx(), engine.Command{Resume: "x"}, opts); !errors.Is(err, engine.ErrInvalidUpdate) || errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("scalar resume with two pending: %v", err)
	}
	st, err := cg.GetState(ctx(), checkpoints.Config{ThreadID: th})
	if err != nil || len(st.Interrupts) != 2 {
		t.Fatalf("GetState interrupts = %+v, %v", st, err)
	}
	answers := map[string]any{}
	for _, i := range is {
		answers[i.ID] = "answer to " + i.Value.(string)
	}
	out, err := cg.Invoke(ctx(), engine.Command{Resume: answers}, opts)
	if err != nil || out.A != "answer to value for a" || out.B != "answer to value for b" {
		t.Fatalf("final %+v %v", out, err)
	}
	if _, err := cg.Invoke(ctx(), engine.Command{Resume: map[string]any{"0123456789abcdef0123456789abcdef": "x"}}, opts); !errors.Is(err, engine.ErrInvalidUpdate) {
		t.Fatalf("resume of an unknown id: %v", err)
	}
}

type topicsState struct {
	Topics  []string `json:"topics"`
	Answers []string `json:"answers" reduce:"append"`
}

// Reference §11 case 24 (tp::test_node_before_interrupt_resume_graph_api,
// test_multiple_nodes_before_interrupt_resume_graph_api): setup nodes run
// once, then ask loops over the topics with one interrupt each. Every
// resume re-runs ask from the top (earlier answers replay), never the
// nodes before it, and the answers come out in topic order.
func nodeBeforeInterrupt(t *testing.T, saver checkpoints.Saver, setupNodes int) {
	var setupCalls, askCalls atomic.Int32
	g := engine.NewStateGraph[topicsState]()
	prev := engine.Start
	for i := range setupNodes {
		name := "setup" + strconv.Itoa(i+1)
		g.AddNode(name, func(context.Context, topicsState) (engine.Output, error) {
			setupCalls.Add(1)
			if name == "setup1" {
				return engine.Update{"topics": []string{"topic1", "topic2"}}, nil
			}
			return nil, nil
		})
		g.AddEdge(prev, name)
		prev = name
	}
	g.AddNode("ask", func(ctx context.Context, s topicsState) (engine.Output, error) {
		askCalls.Add(1)
		var answers []string
		for _, topic := range s.Topics {
			a, err := engine.Interrupt(ctx, "question about "+topic)
			if err != nil {
				return nil, err
			}
			answers = append(answers, a.(string))
		}
		return engine.Update{"answers": answers}, nil
	})
	g.AddEdge(prev, "ask")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	opts := &engine.RunOptions{ThreadID: thread(t, "1")}

	_, err := cg.Invoke(ctx(), engine.Update{"answers": []string{}}, opts)
	if is := interrupted(t, err).Interrupts; len(is) != 1 || is[0].Value != "question about topic1" {
		t.Fatalf("first run: interrupts %+v, want the question about topic1", is)
	}
	_, err = cg.Invoke(ctx(), engine.Command{Resume: "answer1"}, opts)
	if is := interrupted(t, err).Interrupts; len(is) != 1 || is[0].Value != "question about topic2" {
		t.Fatalf("after answer1: interrupts %+v, want the question about topic2", is)
	}
	out, err := cg.Invoke(ctx(), engine.Command{Resume: "answer2"}, opts)
	if err != nil || !reflect.DeepEqual(out.Answers, []string{"answer1", "answer2"}) {
		t.Fatalf("final answers %v, %v; want [answer1 answer2]", out.Answers, err)
	}
	if n := setupCalls.Load(); n != int32(setupNodes) {
		t.Fatalf("the %d setup node(s) ran %d times in all, want once each", setupNodes, n)
	}
	if n := askCalls.Load(); n != 3 {
		t.Fatalf("ask ran %d times, want 3 (the first run and once per resume)", n)
	}
}

type transfer struct {
	Amount    int    `json:"amount"`
	Recipient string `json:"recipient"`
	Status    string `json:"status"`
}

// The bank-transfer approval: amounts over 1000 need a person; "approve"
// executes, anything else rejects. Each answer runs on a thread of its own
// in one saver.
func bankTransferApproval(t *testing.T, saver checkpoints.Saver) {
	build := func() *engine.Graph[transfer] {
		g := engine.NewStateGraph[transfer]()
		g.AddNode("risk_check", func(ctx context.Context, s transfer) (engine.Output, error) {
			if s.Amount <= 1000 {
				return engine.Command{Goto: []any{"execute"}}, nil
			}
			answer, err := engine.Interrupt(ctx, map[string]any{"question": "Approve transfer of " + strconv.Itoa(s.Amount) + " to " + s.Recipient + "?"})
			if err != nil {
				return nil, err
			}
			if answer == "approve" {
				return engine.Command{Goto: []any{"execute"}}, nil
			}
			return engine.Command{Goto: []any{"reject"}}, nil
		}, engine.Destinations("execute", "reject"))
		g.AddNode("execute", func(context.Context, transfer) (engine.Output, error) {
			return engine.Update{"status": "executed"}, nil
		})
		g.AddNode("reject", func(context.Context, transfer) (engine.Output, error) {
			return engine.Update{"status": "rejected"}, nil
		})
		g.AddEdge(engine.Start, "risk_check")
		cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
		if w := cg.Warnings(); len(w) != 0 {
			t.Fatalf("lint: %v", w)
		}
		return cg
	}
	for _, tc := range []struct {
		answer, want string
	}{{"approve", "executed"}, {"no way", "rejected"}} {
		cg := build()
		opts := &engine.RunOptions{ThreadID: thread(t, tc.answer)}
		_, err := cg.Invoke(ctx(), engine.Update{"amount": 5000, "recipient": "Bob"}, opts)
		q := interrupted(t, err).Interrupts[0].Value.(map[string]any)["question"]
		if q != "Approve transfer of 5000 to Bob?" {
			t.Fatalf("question %v", q)
		}
		out, err := cg.Invoke(ctx(), engine.Command{Resume: tc.answer}, opts)
		if err != nil || out.Status != tc.want {
			t.Fatalf("answer %q: %+v, %v", tc.answer, out, err)
		}
	}
	out, err := build().Invoke(ctx(), engine.Update{"amount": 10, "recipient": "Al"}, &engine.RunOptions{ThreadID: thread(t, "small")})
	if err != nil || out.Status != "executed" {
		t.Fatalf("small transfer: %+v %v", out, err)
	}
}
