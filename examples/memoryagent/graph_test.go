package memoryagent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/memoryagent"
	"github.com/superstep-dev/superstep/store"
)

var facts = []string{
	"I am allergic to peanuts and shellfish.",
	"My daughter Maya plays the violin in the school orchestra.",
	"I drive a blue electric car.",
	"My flight to Lisbon leaves on the twelfth of June.",
	"I work as a nurse on night shifts.",
}

type setup struct {
	store store.Store
	graph *engine.Graph[memoryagent.State]
}

func newSetup(t *testing.T, saver checkpoints.Saver) *setup {
	t.Helper()
	st, err := memoryagent.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	g, err := memoryagent.New(memoryagent.Options{Store: st, Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return &setup{store: st, graph: g}
}

func (s *setup) run(t *testing.T, input engine.Update, opts *engine.RunOptions) memoryagent.State {
	t.Helper()
	out, err := s.graph.Invoke(context.Background(), input, opts)
	if err != nil {
		t.Fatalf("run %v: %v", input, err)
	}
	return out
}

// Each question shares no content word with its fact: only the embedding
// connects them.
func TestRecallsTheRightFactForAParaphrase(t *testing.T) {
	t.Parallel()
	s := newSetup(t, nil)
	s.run(t, memoryagent.Remember("ana", facts...), nil)
	cases := []struct {
		question string
		want     string
	}{
		{"Which foods should I avoid eating?", facts[0]},
		{"What musical instrument does my child practice?", facts[1]},
		{"What kind of vehicle do I own?", facts[2]},
		{"When is my trip to Portugal?", facts[3]},
		{"What is my job?", facts[4]},
	}
	for _, tc := range cases {
		t.Run(tc.question, func(t *testing.T) {
			t.Parallel()
			out := s.run(t, memoryagent.Ask("ana", tc.question), nil)
			if len(out.Recalled) == 0 {
				t.Fatal("nothing recalled")
			}
			if out.Recalled[0].Text != tc.want {
				t.Fatalf("recalled first %q (score %.3f), want %q; all: %+v", out.Recalled[0].Text, out.Recalled[0].Score, tc.want, out.Recalled)
			}
			for i := 1; i < len(out.Recalled); i++ {
				if out.Recalled[i].Score > out.Recalled[i-1].Score {
					t.Fatalf("recalled memories are not best first: %+v", out.Recalled)
				}
			}
			if out.Answer != "You told me: "+tc.want {
				t.Fatalf("answer %q does not use the recalled fact", out.Answer)
			}
		})
	}
}

// Memories live in the store, not in the thread: a later conversation on
// another thread recalls them, and another user's memories stay apart.
func TestMemoriesOutliveTheThreadAndStayPerUser(t *testing.T) {
	t.Parallel()
	s := newSetup(t, checkpoints.NewMemory())
	s.run(t, memoryagent.Remember("ana", facts...), &engine.RunOptions{ThreadID: "monday"})

	out := s.run(t, memoryagent.Ask("ana", "Which foods should I avoid eating?"), &engine.RunOptions{ThreadID: "friday"})
	if len(out.Recalled) == 0 || out.Recalled[0].Text != facts[0] {
		t.Fatalf("a new thread recalled %+v, want the allergy first", out.Recalled)
	}

	other := s.run(t, memoryagent.Ask("ben", "Which foods should I avoid eating?"), &engine.RunOptions{ThreadID: "ben-1"})
	if len(other.Recalled) != 0 {
		t.Fatalf("ben recalled ana's memories: %+v", other.Recalled)
	}
	if !strings.Contains(other.Answer, "don't know") {
		t.Fatalf("answer without memories = %q, want an admission", other.Answer)
	}
}

// A fact told in the same turn as the question is stored first and
// recalled at once.
func TestRememberAndAskInOneTurn(t *testing.T) {
	t.Parallel()
	s := newSetup(t, nil)
	in := memoryagent.Ask("ana", "What musical instrument does my child practice?")
	in["facts"] = facts
	out := s.run(t, in, nil)
	if len(out.Recalled) == 0 || out.Recalled[0].Text != facts[1] {
		t.Fatalf("recalled %+v, want the violin first", out.Recalled)
	}
	if len(out.Facts) != 0 {
		t.Fatalf("facts %v left in the state after remembering them", out.Facts)
	}
}

// Facts are stored under the user's namespace, keyed by their text (so a
// repeat is stored once), with the text embedded.
func TestFactsAreStoredOnceAndIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSetup(t, nil)
	s.run(t, memoryagent.Remember("ana", facts[0], facts[0], facts[2]), nil)
	s.run(t, memoryagent.Remember("ana", facts[2]), nil)
	items, err := store.Search(ctx, s.store, store.SearchOp{NamespacePrefix: memoryagent.Namespace("ana")})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("%d items stored for two distinct facts: %+v", len(items), items)
	}
	hits, err := store.Search(ctx, s.store, store.SearchOp{NamespacePrefix: memoryagent.Namespace("ana"), Query: "automobile"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Value["text"] != facts[2] || hits[0].Score == nil {
		t.Fatalf("semantic search for automobile = %+v, want the car first with a score", hits)
	}
}

func TestBadUserIsAClearError(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"", "ana.smith"} {
		s := newSetup(t, nil)
		_, err := s.graph.Invoke(context.Background(), memoryagent.Remember(user, facts[0]), nil)
		if !errors.Is(err, store.ErrInvalidNamespace) || !strings.Contains(err.Error(), "cannot name a memory namespace") {
			t.Fatalf("user %q: error %v, want an invalid-namespace error naming the user", user, err)
		}
	}
}
