package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

var durs = []struct {
	name string
	d    engine.Durability
}{{"sync", engine.DurabilitySync}, {"async", engine.DurabilityAsync}, {"exit", engine.DurabilityExit}}

// A resumed run whose first step stops again at an interrupt
// (a asks twice), b finished beside it in the first run. Under exit
// durability the answer, a's second interrupt and b's writes must survive.
func TestExitDurabilityResumeThatInterruptsAgainKeepsItsAnswer(t *testing.T) {
	t.Parallel()
	for _, d := range durs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var bCalls atomic.Int32
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", func(ctx context.Context, _ logState) (engine.Output, error) {
				x, err := engine.Interrupt(ctx, "q1")
				if err != nil {
					return nil, err
				}
				y, err := engine.Interrupt(ctx, "q2")
				if err != nil {
					return nil, err
				}
				return engine.Update{"log": fmt.Sprintf("a:%v,%v", x, y)}, nil
			})
			g.AddNode("b", func(context.Context, logState) (engine.Output, error) {
				bCalls.Add(1)
				return engine.Update{"log": "b"}, nil
			})
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b")
			cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			ctx := context.Background()
			opts := &engine.RunOptions{ThreadID: "t", Durability: d.d}
			if _, err := cg.Invoke(ctx, engine.Update{"log": "in"}, opts); !errors.Is(err, engine.ErrInterrupted) {
				t.Fatalf("run 1: %v", err)
			}
			if _, err := cg.Invoke(ctx, engine.Command{Resume: "x"}, opts); !errors.Is(err, engine.ErrInterrupted) {
				t.Fatalf("run 2: %v, want a's second interrupt", err)
			}
			st, err := cg.GetState(ctx, checkpoints.Config{ThreadID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Interrupts) != 1 || st.Interrupts[0].Value != "q2" {
				t.Errorf("after run 2 the thread waits at %+v, want q2", st.Interrupts)
			}
			out, err := cg.Invoke(ctx, engine.Command{Resume: "y"}, opts)
			if err != nil {
				t.Fatalf("run 3: %v", err)
			}
			if want := []string{"in", "a:x,y", "b"}; !slices.Equal(out.Log, want) {
				t.Errorf("log %v, want %v", out.Log, want)
			}
			if n := bCalls.Load(); n != 1 {
				t.Errorf("b ran %d times, want once", n)
			}
		})
	}
}

// Two interrupts in one step; the first resume answers one of them by
// id. The answered task finishes, the other still waits; the second
// resume answers it. The first answer must not be asked again.
func TestExitDurabilityAnsweringOneOfTwoInterrupts(t *testing.T) {
	t.Parallel()
	for _, d := range durs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			ask := func(name string) func(context.Context, logState) (engine.Output, error) {
				return func(ctx context.Context, _ logState) (engine.Output, error) {
					asked.Add(1)
					v, err := engine.Interrupt(ctx, name+"?")
					if err != nil {
						return nil, err
					}
					return engine.Update{"log": name + ":" + fmt.Sprint(v)}, nil
				}
			}
			g := engine.NewStateGraph[logState]()
			g.AddNode("a", ask("a"))
			g.AddNode("c", ask("c"))
			g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "c")
			cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
			ctx := context.Background()
			opts := &engine.RunOptions{ThreadID: "t", Durability: d.d}
			_, err := cg.Invoke(ctx, engine.Update{"log": "in"}, opts)
			var in *engine.Interrupted
			if !errors.As(err, &in) || len(in.Interrupts) != 2 {
				t.Fatalf("run 1: %v", err)
			}
			var aID, cID string
			for _, i := range in.Interrupts {
				if i.Value == "a?" {
					aID = i.ID
				} else {
					cID = i.ID
				}
			}
			if _, err := cg.Invoke(ctx, engine.Command{Resume: map[string]any{aID: "A"}}, opts); !errors.Is(err, engine.ErrInterrupted) {
				t.Fatalf("run 2: %v, want c still waiting", err)
			}
			out, err := cg.Invoke(ctx, engine.Command{Resume: map[string]any{cID: "C"}}, opts)
			if err != nil {
				t.Fatalf("run 3 (answering c): %v", err)
			}
			got := slices.Sorted(slices.Values(out.Log))
			if want := []string{"a:A", "c:C", "in"}; !slices.Equal(got, want) {
				t.Errorf("log %v, want %v", got, want)
			}
		})
	}
}

// Time travel with a Command update under exit durability, the first
// step after the fork stopping at an interrupt: the update must be applied
// once (the fork's state already holds it).
func TestExitDurabilityTravelWithUpdateThenInterruptAppliesTheUpdateOnce(t *testing.T) {
	t.Parallel()
	for _, d := range durs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			g := engine.NewStateGraph[logState]()
			g.AddNode("p", func(context.Context, logState) (engine.Output, error) { return engine.Update{"log": "p"}, nil })
			g.AddNode("a", func(ctx context.Context, _ logState) (engine.Output, error) {
				v, err := engine.Interrupt(ctx, "ok?")
				if err != nil {
					return nil, err
				}
				return engine.Update{"log": "a:" + fmt.Sprint(v)}, nil
			})
			g.AddEdge(engine.Start, "p").AddEdge("p", "a")
			saver := checkpoints.NewMemory()
			cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
			ctx := context.Background()
			if _, err := cg.Invoke(ctx, engine.Update{"log": "in"}, &engine.RunOptions{ThreadID: "t", Durability: d.d}); !errors.Is(err, engine.ErrInterrupted) {
				t.Fatalf("run 1: %v", err)
			}
			head, err := saver.Get(ctx, checkpoints.Config{ThreadID: "t"})
			if err != nil || head == nil {
				t.Fatal(head, err)
			}
			travel := &engine.RunOptions{ThreadID: "t", Durability: d.d, CheckpointID: head.Config.CheckpointID}
			if _, err := cg.Invoke(ctx, engine.Command{Update: engine.Update{"log": "u"}}, travel); !errors.Is(err, engine.ErrInterrupted) {
				t.Fatalf("run 2 (travel): %v", err)
			}
			out, err := cg.Invoke(ctx, engine.Command{Resume: "yes"}, &engine.RunOptions{ThreadID: "t", Durability: d.d})
			if err != nil {
				t.Fatalf("run 3: %v", err)
			}
			if want := []string{"in", "p", "u", "a:yes"}; !slices.Equal(out.Log, want) {
				t.Errorf("log %v, want %v", out.Log, want)
			}
		})
	}
}
