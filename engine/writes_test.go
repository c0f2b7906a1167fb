package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// writesState is the state of the Writes equivalence graphs.
type writesState struct {
	N   int      `json:"n"`
	Log []string `json:"log" reduce:"append"`
	Msg string   `json:"msg"`
}

// nodeLogic is a node written once and added in either form: it writes
// through set.
type nodeLogic func(ctx context.Context, s writesState, set func(key string, v any)) error

// twinBuilder adds nodeLogic as an Output node (writes returned as Set or
// Updates) or as a Writes node.
type twinBuilder struct {
	g       *engine.StateGraph[writesState]
	asWrite bool
}

func (b twinBuilder) node(name string, f nodeLogic, opts ...engine.NodeOption) {
	if b.asWrite {
		b.g.AddNodeWrites(name, func(ctx context.Context, s writesState, w *engine.Writes) error {
			return f(ctx, s, w.Set)
		}, opts...)
		return
	}
	b.g.AddNode(name, func(ctx context.Context, s writesState) (engine.Output, error) {
		var u engine.Updates
		if err := f(ctx, s, func(k string, v any) { u = append(u, engine.Set(k, v)) }); err != nil {
			return nil, err
		}
		switch len(u) {
		case 0:
			return nil, nil
		case 1:
			return u[0], nil
		}
		return u, nil
	}, opts...)
}

// sendNode adds a Send target taking an int, in either form.
func (b twinBuilder) sendNode(name string, f func(ctx context.Context, x int, set func(string, any)) error) {
	if b.asWrite {
		engine.AddNodeFuncWrites(b.g, name, func(ctx context.Context, x int, w *engine.Writes) error { return f(ctx, x, w.Set) })
		return
	}
	engine.AddNodeFunc(b.g, name, func(ctx context.Context, x int) (engine.Output, error) {
		var u engine.Updates
		if err := f(ctx, x, func(k string, v any) { u = append(u, engine.Set(k, v)) }); err != nil {
			return nil, err
		}
		return u, nil
	})
}

var errFlaky = errors.New("flaky")

// writesCases are graphs whose nodes write in both forms; each must give
// the same run either way.
var writesCases = []struct {
	name  string
	build func(b twinBuilder)
	input engine.Update
}{
	{"loop with a router", func(b twinBuilder) {
		b.node("inc", func(_ context.Context, s writesState, set func(string, any)) error {
			set("n", s.N+1)
			return nil
		})
		b.g.AddEdge(engine.Start, "inc")
		b.g.AddConditionalEdges("inc", func(_ context.Context, s writesState) (engine.Route, error) {
			if s.N >= 4 {
				return engine.To(engine.End), nil
			}
			return engine.To("inc"), nil
		}, nil)
	}, engine.Update{"n": 0}},
	{"several writes, one key repeated", func(b twinBuilder) {
		b.node("a", func(_ context.Context, s writesState, set func(string, any)) error {
			set("log", "a1")
			set("n", 7)
			set("log", "a2")
			set("msg", nil) // written zero
			return nil
		})
		b.node("b", func(_ context.Context, s writesState, set func(string, any)) error {
			set("n", int64(s.N*2)) // converted to int as a returned update is
			return nil
		})
		b.node("quiet", func(context.Context, writesState, func(string, any)) error { return nil })
		b.g.AddSequence("a", "b", "quiet")
		b.g.AddEdge(engine.Start, "a")
	}, engine.Update{"msg": "hi"}},
	{"parallel branches and a join", func(b twinBuilder) {
		for _, n := range []string{"x", "y", "z"} {
			b.node(n, func(_ context.Context, _ writesState, set func(string, any)) error {
				set("log", n)
				return nil
			})
			b.g.AddEdge(engine.Start, n)
		}
		b.node("join", func(_ context.Context, s writesState, set func(string, any)) error {
			set("msg", strings.Join(s.Log, ","))
			return nil
		})
		b.g.AddJoin([]string{"x", "y", "z"}, "join")
	}, engine.Update{"log": []string{}}},
	{"sends", func(b twinBuilder) {
		b.node("plan", func(context.Context, writesState, func(string, any)) error { return nil })
		b.sendNode("work", func(_ context.Context, x int, set func(string, any)) error {
			set("log", fmt.Sprint("w", x))
			return nil
		})
		b.g.AddEdge(engine.Start, "plan")
		b.g.AddConditionalEdges("plan", func(context.Context, writesState) (engine.Route, error) {
			return engine.SendTo(engine.Send{Node: "work", Arg: 1}, engine.Send{Node: "work", Arg: 2}), nil
		}, nil)
	}, engine.Update{"n": 1}},
	{"a retried attempt's writes are discarded", func(b twinBuilder) {
		b.node("flaky", func(ctx context.Context, s writesState, set func(string, any)) error {
			set("log", fmt.Sprint("attempt ", engine.Attempt(ctx)))
			if engine.Attempt(ctx) < 3 {
				set("n", 99)
				return errFlaky
			}
			return nil
		}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 3, RetryOn: func(err error) bool { return errors.Is(err, errFlaky) }}))
		b.g.AddEdge(engine.Start, "flaky")
	}, engine.Update{"n": 1}},
	{"a failing attempt beside a sibling that succeeds", func(b twinBuilder) {
		b.node("ok", func(_ context.Context, _ writesState, set func(string, any)) error {
			set("log", "ok")
			return nil
		})
		b.node("fails", func(_ context.Context, _ writesState, set func(string, any)) error {
			set("log", "lost")
			return engine.Permanent(errors.New("broken"))
		})
		b.g.AddEdge(engine.Start, "ok")
		b.g.AddEdge(engine.Start, "fails")
	}, engine.Update{"n": 1}},
	{"a panic", func(b twinBuilder) {
		b.node("boom", func(_ context.Context, _ writesState, set func(string, any)) error {
			set("log", "lost")
			panic("boom")
		})
		b.g.AddEdge(engine.Start, "boom")
	}, engine.Update{"n": 1}},
	{"an unknown key", func(b twinBuilder) {
		b.node("bad", func(_ context.Context, _ writesState, set func(string, any)) error {
			set("log", "x")
			set("nope", 1)
			return nil
		})
		b.g.AddEdge(engine.Start, "bad")
	}, engine.Update{"n": 1}},
	{"a value of the wrong type", func(b twinBuilder) {
		b.node("bad", func(_ context.Context, _ writesState, set func(string, any)) error {
			set("n", "seven")
			return nil
		})
		b.g.AddEdge(engine.Start, "bad")
	}, engine.Update{"n": 1}},
	{"an interrupt drops the attempt's writes", func(b twinBuilder) {
		b.node("ask", func(ctx context.Context, _ writesState, set func(string, any)) error {
			set("log", "before")
			answer, err := engine.Interrupt(ctx, "name?")
			if err != nil {
				return err
			}
			set("msg", answer)
			return nil
		})
		b.g.AddEdge(engine.Start, "ask")
	}, engine.Update{"n": 1}},
}

// TestWritesMatchOutput: a node writing through Writes gives the same
// final state, task writes, events, stream parts and checkpoints as the
// same node returning its update.
func TestWritesMatchOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range writesCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := func(asWrite bool) string {
				g := engine.NewStateGraph[writesState]()
				tc.build(twinBuilder{g: g, asWrite: asWrite})
				cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
				if err != nil {
					t.Fatal(err)
				}
				return observeRun(t, cg, tc.input)
			}
			out, writes := run(false), run(true)
			if out != writes {
				ol, wl := strings.Split(out, "\n"), strings.Split(writes, "\n")
				for i := range min(len(ol), len(wl)) {
					if ol[i] != wl[i] {
						t.Errorf("Writes form differs from the Output form at line %d\n--- Output:\n%s\n--- Writes:\n%s", i, ol[i], wl[i])
						break
					}
				}
				if len(ol) != len(wl) {
					t.Errorf("Output form: %d lines, Writes form: %d\n--- Output:\n%s\n--- Writes:\n%s", len(ol), len(wl), out, writes)
				}
			}
			if !strings.Contains(out, "TaskFinished") {
				t.Errorf("nothing observed:\n%s", out)
			}
		})
	}
}

var (
	uuidRe  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	hexIDRe = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	tsRe    = regexp.MustCompile(`"\d{4}-\d\d-\d\dT[0-9:.]+Z"`)
)

// observeRun runs the graph (resuming once when it stops at an
// interrupt) and describes what a user sees: each run's error and final
// state, its events and stream parts, and the thread's history. Ids and
// times are masked, and a run's events and parts are sorted: parallel
// tasks report in any order, and each line names its step.
func observeRun(t *testing.T, g *engine.Graph[writesState], input engine.Update) string {
	t.Helper()
	var lines []string
	var in any = input
	for range 2 {
		var events []string
		opts := &engine.RunOptions{ThreadID: "t", Listener: func(e engine.Event) {
			switch x := e.(type) {
			case engine.TaskFinished:
				x.Duration = 0
				e = x
			case engine.TaskRetried:
				events = append(events, fmt.Sprintf("retried after %v", x.Err))
				x.Backoff, x.Err = 0, nil
				e = x
			case engine.TaskFailed:
				// A panic's stack differs; its message is kept.
				events = append(events, fmt.Sprintf("failed with %v", x.Err))
				x.Err = nil
				e = x
			case engine.RunFinished:
				return // its Err is compared below
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Errorf("%T: %v", e, err) // on the run's goroutine: no Fatal
			}
			events = append(events, fmt.Sprintf("%T %s", e, b))
		}}
		var parts []string
		var runErr error
		for p, err := range g.Stream(context.Background(), in, opts, engine.StreamUpdates, engine.StreamValues, engine.StreamCheckpoints, engine.StreamTasks) {
			if err != nil {
				runErr = err
				continue
			}
			b, _ := json.Marshal(p.Data)
			parts = append(parts, fmt.Sprintf("%s %s", p.Mode, b))
		}
		events, parts = maskIDs(events), maskIDs(parts)
		slices.Sort(events)
		slices.Sort(parts)
		lines = append(lines, maskIDs([]string{fmt.Sprintf("run error: %v", runErr)})...)
		lines = append(lines, events...)
		lines = append(lines, parts...)
		if !errors.Is(runErr, engine.ErrInterrupted) {
			break
		}
		in = engine.Command{Resume: "Ada"}
	}
	hist, err := g.GetStateHistory(context.Background(), checkpoints.Config{ThreadID: "t"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hist {
		s.CreatedAt = s.CreatedAt.UTC().Truncate(0)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, maskIDs([]string{"checkpoint " + string(b)})...)
	}
	return strings.Join(lines, "\n")
}

// maskIDs replaces ids (checkpoints', tasks', interrupts') and times,
// which differ from run to run, in place.
func maskIDs(lines []string) []string {
	for i, l := range lines {
		l = uuidRe.ReplaceAllString(l, "<id>")
		l = hexIDRe.ReplaceAllString(l, "<id>")
		lines[i] = tsRe.ReplaceAllString(l, "<ts>")
	}
	return lines
}

// TestWritesErrorsNameNodeAndKey: the errors of a bad Writes update are
// the Output form's, naming the node and the key.
func TestWritesErrorsNameNodeAndKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		v    any
		want string
	}{
		{"nope", 1, `node "bad" wrote unknown state key "nope"`},
		{"n", "seven", `node "bad" wrote a string to key "n", which holds int`},
	} {
		g := engine.NewStateGraph[writesState]()
		g.AddNodeWrites("bad", func(_ context.Context, _ writesState, w *engine.Writes) error {
			w.Set(tc.key, tc.v)
			return nil
		})
		g.AddEdge(engine.Start, "bad")
		cg, err := g.Compile(engine.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cg.Invoke(context.Background(), engine.Update{"n": 1}, nil)
		if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Set(%q, %v): err = %v, want an ErrInvalidUpdate saying %q", tc.key, tc.v, err, tc.want)
		}
	}
}

// TestWritesKeptAfterReturnPanics: a Writes is valid only during the
// call it was given to. Set on it afterwards panics and writes nothing,
// whether from outside the run or from the node's next call.
func TestWritesKeptAfterReturnPanics(t *testing.T) {
	t.Parallel()
	var kept atomic.Pointer[engine.Writes]
	var lateErr atomic.Value
	g := engine.NewStateGraph[writesState]()
	g.AddNodeWrites("inc", func(_ context.Context, s writesState, w *engine.Writes) error {
		if old := kept.Load(); old != nil {
			func() {
				defer func() { lateErr.Store(fmt.Sprint(recover())) }()
				old.Set("log", "stale")
			}()
		}
		kept.Store(w)
		w.Set("n", s.N+1)
		return nil
	})
	g.AddEdge(engine.Start, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s writesState) (engine.Route, error) {
		if s.N >= 3 {
			return engine.To(engine.End), nil
		}
		return engine.To("inc"), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Twice: the second run reuses the first's tasks.
	for range 2 {
		kept.Store(nil)
		out, err := cg.Invoke(context.Background(), engine.Update{"n": 0}, nil)
		if err != nil || out.N != 3 || len(out.Log) != 0 {
			t.Fatalf("out = %+v, %v; want n=3 and no stale log", out, err)
		}
		if msg, _ := lateErr.Load().(string); !strings.Contains(msg, "Writes.Set called after its node returned") {
			t.Errorf("Set on the previous step's Writes: recovered %q, want the after-return panic", msg)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "after its node returned") {
			t.Errorf("Set after the run: recovered %v, want the after-return panic", r)
		}
	}()
	kept.Load().Set("n", 100)
}

// TestWritesOfAFailedAttemptPanicInTheRetry: each attempt has its own
// Writes; the failed attempt's, used by the retry, panics and writes
// nothing.
func TestWritesOfAFailedAttemptPanicInTheRetry(t *testing.T) {
	t.Parallel()
	var first *engine.Writes
	var recovered any
	g := engine.NewStateGraph[writesState]()
	g.AddNodeWrites("flaky", func(ctx context.Context, _ writesState, w *engine.Writes) error {
		if engine.Attempt(ctx) == 1 {
			first = w
			w.Set("log", "attempt 1")
			return errFlaky
		}
		func() {
			defer func() { recovered = recover() }()
			first.Set("log", "stale")
		}()
		w.Set("log", "attempt 2")
		return nil
	}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 2, RetryOn: func(err error) bool { return errors.Is(err, errFlaky) }}))
	g.AddEdge(engine.Start, "flaky")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"log": []string{}}, nil)
	if err != nil || !slices.Equal(out.Log, []string{"attempt 2"}) {
		t.Fatalf("out = %+v, %v; want only the second attempt's write", out, err)
	}
	if !strings.Contains(fmt.Sprint(recovered), "after its node returned") {
		t.Errorf("Set on the failed attempt's Writes: recovered %v, want the after-return panic", recovered)
	}
}

// TestWritesCached: a cached Writes node's writes are replayed from the
// cache, as a returned Output's are.
func TestWritesCached(t *testing.T) {
	t.Parallel()
	calls := 0
	g := engine.NewStateGraph[lookupState]()
	g.AddNodeWrites("define", func(_ context.Context, s lookupState, w *engine.Writes) error {
		calls++
		w.Set("meaning", strings.ToUpper(s.Word))
		return nil
	}, engine.WithCache(engine.CachePolicy{TTL: time.Hour}))
	g.AddEdge(engine.Start, "define")
	cg, err := g.Compile(engine.CompileOptions{Cache: cache.NewMemory(nil)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, word := range []string{"pregel", "pregel", "superstep"} {
		cached := false
		opts := &engine.RunOptions{Listener: func(e engine.Event) {
			if f, ok := e.(engine.TaskFinished); ok && f.Task.Name == "define" {
				cached = f.Cached
			}
		}}
		out, err := cg.Invoke(context.Background(), engine.Update{"word": word}, opts)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %v", out.Meaning, cached))
	}
	if want := []string{"PREGEL false", "PREGEL true", "SUPERSTEP false"}; !slices.Equal(got, want) || calls != 2 {
		t.Errorf("runs = %q with %d node calls, want %q with 2", got, calls, want)
	}
}

// ExampleStateGraph_AddNodeWrites: a node that writes its update into
// the Writes it is given costs no Output to box.
func ExampleStateGraph_AddNodeWrites() {
	g := engine.NewStateGraph[writesState]()
	g.AddNodeWrites("inc", func(_ context.Context, s writesState, w *engine.Writes) error {
		w.Set("n", s.N+1)
		w.Set("log", fmt.Sprint("was ", s.N))
		return nil
	})
	g.AddEdge(engine.Start, "inc")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		panic(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"n": 41}, nil)
	fmt.Println(out.N, out.Log, err)
	// Output: 42 [was 41] <nil>
}
