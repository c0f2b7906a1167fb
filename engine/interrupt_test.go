package engine_test

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

type strState struct {
	MyKey string `json:"my_key" reduce:"add"`
}

func interrupted(t *testing.T, err error) *engine.Interrupted {
	t.Helper()
	var in *engine.Interrupted
	if !errors.As(err, &in) {
		t.Fatalf("err = %v, want *engine.Interrupted", err)
	}
	return in
}

// Reference §11 case 18, with our fix: the two interrupts of one node have
// distinct ids, answered one at a time, each resume re-running the node.
func TestTwoInterruptsInOneNode(t *testing.T) {
	t.Parallel()
	for _, byID := range []bool{false, true} {
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
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		opts := &engine.RunOptions{ThreadID: "1"}
		_, err = cg.Invoke(ctx, engine.Update{"my_key": "DE"}, opts)
		first := interrupted(t, err).Interrupts
		if len(first) != 1 || !reflect.DeepEqual(first[0].Value, map[string]any{"value": 1}) || first[0].Node != "node" {
			t.Fatalf("first interrupts = %+v", first)
		}
		var resume any = "answer 1"
		if byID {
			resume = map[string]any{first[0].ID: "answer 1"}
		}
		_, err = cg.Invoke(ctx, engine.Command{Resume: resume, Update: engine.Update{"my_key": " foofoo "}}, opts)
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
		out, err := cg.Invoke(ctx, engine.Command{Resume: resume}, opts)
		if err != nil || out.MyKey != "DE foofoo  answer 1 answer 2" {
			t.Fatalf("byID=%v: final = %q, %v", byID, out.MyKey, err)
		}
		if calls.Load() != 3 {
			t.Fatalf("node ran %d times, want 3 (once per resume, from the top)", calls.Load())
		}
	}
}

type ageState struct {
	Age int `json:"age"`
}

// Reference §11 case 19: a node asks until the answer is valid.
func TestInterruptLoop(t *testing.T) {
	t.Parallel()
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
	cg, _ := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	_, err := cg.Invoke(ctx, engine.Update{"age": 0}, opts)
	if v := interrupted(t, err).Interrupts[0].Value; v != "how old are you?" {
		t.Fatalf("first question %v", v)
	}
	for _, a := range []string{"13", "15"} {
		_, err = cg.Invoke(ctx, engine.Command{Resume: a}, opts)
		if v := interrupted(t, err).Interrupts[0].Value; v != "invalid response" {
			t.Fatalf("after %s: %v", a, v)
		}
	}
	out, err := cg.Invoke(ctx, engine.Command{Resume: "19"}, opts)
	if err != nil || out.Age != 19 {
		t.Fatalf("final %+v %v", out, err)
	}
}

type pairState struct {
	A string `json:"a"`
	B string `json:"b"`
}

// Reference §11 case 20: with two pending interrupts a single resume value
// is ambiguous; a map by id answers both.
func TestAmbiguousScalarResume(t *testing.T) {
	t.Parallel()
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
	cg, _ := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	_, err := cg.Invoke(ctx, engine.Update{"a": ""}, opts)
	is := interrupted(t, err).Interrupts
	if len(is) != 2 {
		t.Fatalf("interrupts %+v", is)
	}
	if _, err := cg.Invoke(ctx, engine.Command{Resume: "x"}, opts); !errors.Is(err, engine.ErrInvalidUpdate) || errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("scalar resume with two pending: %v", err)
	}
	st, err := cg.GetState(ctx, checkpoints.Config{ThreadID: "1"})
	if err != nil || len(st.Interrupts) != 2 {
		t.Fatalf("GetState interrupts = %+v, %v", st, err)
	}
	answers := map[string]any{}
	for _, i := range is {
		answers[i.ID] = "answer to " + i.Value.(string)
	}
	out, err := cg.Invoke(ctx, engine.Command{Resume: answers}, opts)
	if err != nil || out.A != "answer to value for a" || out.B != "answer to value for b" {
		t.Fatalf("final %+v %v", out, err)
	}
	if _, err := cg.Invoke(ctx, engine.Command{Resume: map[string]any{"0123456789abcdef0123456789abcdef": "x"}}, opts); !errors.Is(err, engine.ErrInvalidUpdate) {
		t.Fatalf("resume of an unknown id: %v", err)
	}
}

type transfer struct {
	Amount    int    `json:"amount"`
	Recipient string `json:"recipient"`
	Status    string `json:"status"`
}

// The bank-transfer approval: amounts over 1000 need a person; "approve"
// executes, anything else rejects.
func TestBankTransferApproval(t *testing.T) {
	t.Parallel()
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
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		if w := cg.Warnings(); len(w) != 0 {
			t.Fatalf("lint: %v", w)
		}
		return cg
	}
	ctx := context.Background()
	for _, tc := range []struct {
		answer, want string
	}{{"approve", "executed"}, {"no way", "rejected"}} {
		cg := build()
		opts := &engine.RunOptions{ThreadID: "t"}
		_, err := cg.Invoke(ctx, engine.Update{"amount": 5000, "recipient": "Bob"}, opts)
		q := interrupted(t, err).Interrupts[0].Value.(map[string]any)["question"]
		if q != "Approve transfer of 5000 to Bob?" {
			t.Fatalf("question %v", q)
		}
		out, err := cg.Invoke(ctx, engine.Command{Resume: tc.answer}, opts)
		if err != nil || out.Status != tc.want {
			t.Fatalf("answer %q: %+v, %v", tc.answer, out, err)
		}
	}
	out, err := build().Invoke(ctx, engine.Update{"amount": 10, "recipient": "Al"}, &engine.RunOptions{ThreadID: "small"})
	if err != nil || out.Status != "executed" {
		t.Fatalf("small transfer: %+v %v", out, err)
	}
}

// Reference §11 cases 25 and 27: replaying from an older checkpoint writes a
// fork checkpoint first, re-runs only the nodes after it, and makes
// interrupts fire again.
func TestReplayFromOlderCheckpoint(t *testing.T) {
	t.Parallel()
	var aCalls, bCalls atomic.Int32
	saver := checkpoints.NewMemory()
	g := engine.NewStateGraph[logState]()
	g.AddNode("node_a", func(context.Context, logState) (engine.Output, error) {
		aCalls.Add(1)
		return engine.Update{"log": "a"}, nil
	})
	g.AddNode("ask_human", func(ctx context.Context, s logState) (engine.Output, error) {
		ans, err := engine.Interrupt(ctx, "what?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"log": "human:" + ans.(string)}, nil
	})
	g.AddNode("node_b", func(context.Context, logState) (engine.Output, error) {
		bCalls.Add(1)
		return engine.Update{"log": "b"}, nil
	})
	g.AddEdge(engine.Start, "node_a").AddSequence("node_a", "ask_human", "node_b")
	cg, _ := g.Compile(engine.CompileOptions{Checkpointer: saver})
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "1"}
	_, err := cg.Invoke(ctx, engine.Update{"log": []string{}}, opts)
	interrupted(t, err)
	out, err := cg.Invoke(ctx, engine.Command{Resume: "first"}, opts)
	if err != nil || !reflect.DeepEqual(out.Log, []string{"a", "human:first", "b"}) {
		t.Fatalf("first branch %v %v", out.Log, err)
	}
	hist, err := cg.GetStateHistory(ctx, checkpoints.Config{ThreadID: "1"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var beforeAsk *engine.StateSnapshot
	for _, h := range hist {
		if reflect.DeepEqual(h.Next, []string{"ask_human"}) {
			beforeAsk = h
		}
	}
	if beforeAsk == nil {
		t.Fatalf("no checkpoint before ask_human in %d", len(hist))
	}
	_, err = cg.Invoke(ctx, nil, &engine.RunOptions{ThreadID: "1", CheckpointID: beforeAsk.Config.CheckpointID})
	interrupted(t, err) // the interrupt fires again
	out, err = cg.Invoke(ctx, engine.Command{Resume: "new_answer"}, opts)
	if err != nil || !reflect.DeepEqual(out.Log, []string{"a", "human:new_answer", "b"}) {
		t.Fatalf("new branch %v %v", out.Log, err)
	}
	if aCalls.Load() != 1 || bCalls.Load() != 2 {
		t.Fatalf("node_a ran %d times (want 1), node_b %d (want 2)", aCalls.Load(), bCalls.Load())
	}
	hist2, _ := cg.GetStateHistory(ctx, checkpoints.Config{ThreadID: "1"}, engine.HistoryOptions{MetadataOnly: true})
	var fork *engine.StateSnapshot
	for _, h := range hist2 {
		if h.Metadata.Source == checkpoints.SourceFork {
			fork = h
		}
	}
	if fork == nil || fork.ParentConfig == nil || fork.ParentConfig.CheckpointID != beforeAsk.Config.CheckpointID {
		t.Fatalf("fork checkpoint missing or not a child of the replayed one: %+v", fork)
	}
	// The old branch is preserved.
	old, err := cg.GetState(ctx, hist[0].Config)
	if err != nil || !reflect.DeepEqual(old.Values["log"], []string{"a", "human:first", "b"}) {
		t.Fatalf("old head %+v %v", old, err)
	}
}
