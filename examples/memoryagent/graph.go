package memoryagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/embed"
)

// ErrNoStore is returned by a run of a graph whose nodes find no store.
var ErrNoStore = errors.New("memoryagent: the graph has no store")

// Memory is one remembered fact as recalled for a question.
type Memory struct {
	Key  string `json:"key"`
	Text string `json:"text"`
	// Score is the cosine similarity of the fact to the question.
	Score float64 `json:"score"`
}

// State is one turn of a conversation with the assistant.
type State struct {
	// User owns the memories; it is the store namespace's second label.
	User string `json:"user"`
	// Facts are new things the user told the assistant to remember.
	Facts []string `json:"facts"`
	// Question, when set, is answered from the user's memories.
	Question string `json:"question"`
	// Recalled are the memories retrieved for the question, best first.
	Recalled []Memory `json:"recalled"`
	// Answer is the model's reply.
	Answer string `json:"answer"`
}

// Options configure the graph.
type Options struct {
	// Store is the long-term memory; nil means NewStore(), a memory store
	// with the offline embedder. A store shared by several compiled graphs
	// (or by runs on many threads) is what makes memories outlive a
	// conversation.
	Store store.Store
	// Model answers questions; nil means ScriptedModel.
	Model Model
	// Recall is how many memories are retrieved per question (0 means 3).
	Recall int
	// Checkpointer and Cache are passed to Compile.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
}

// Node names.
const (
	NodeRemember = "remember"
	NodeRecall   = "recall"
	NodeAnswer   = "reply"
)

// factField is the document field that holds a fact's text and is
// embedded for semantic search.
const factField = "text"

// NewStore returns a memory store whose semantic index embeds the fact
// text with embed.Offline(), which needs no network.
func NewStore() (store.Store, error) {
	return store.NewMemory(store.Options{Index: &store.IndexConfig{Embedder: embed.Offline(), Fields: []string{factField}}})
}

// Namespace is where a user's memories live in the store.
func Namespace(user string) []string { return []string{"memories", user} }

// Remember is a run input that stores facts for user.
func Remember(user string, facts ...string) engine.Update {
	return engine.Update{"user": user, "facts": facts}
}

// Ask is a run input that answers question from user's memories.
func Ask(user, question string) engine.Update {
	return engine.Update{"user": user, "question": question}
}

// New builds the graph: remember stores the turn's facts, then, when the
// turn has a question, recall searches the memories and answer replies.
func New(opts Options) (*engine.Graph[State], error) {
	st := opts.Store
	if st == nil {
		var err error
		if st, err = NewStore(); err != nil {
			return nil, err
		}
	}
	model := opts.Model
	if model == nil {
		model = ScriptedModel{}
	}
	limit := opts.Recall
	if limit <= 0 {
		limit = 3
	}
	g := engine.NewStateGraph[State]()
	g.AddNode(NodeRemember, remember)
	g.AddNode(NodeRecall, func(ctx context.Context, s State) (engine.Output, error) { return recall(ctx, s, limit) })
	g.AddNode(NodeAnswer, func(ctx context.Context, s State) (engine.Output, error) { return answer(ctx, model, s) })
	g.AddEdge(engine.Start, NodeRemember)
	g.AddConditionalEdges(NodeRemember, func(_ context.Context, s State) (engine.Route, error) {
		if strings.TrimSpace(s.Question) == "" {
			return engine.To("done"), nil
		}
		return engine.To("ask"), nil
	}, map[string]string{"ask": NodeRecall, "done": engine.End})
	g.AddEdge(NodeRecall, NodeAnswer)
	g.AddEdge(NodeAnswer, engine.End)
	return g.Compile(engine.CompileOptions{Name: "memoryagent", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: st})
}

func userStore(ctx context.Context, s State) (store.Store, []string, error) {
	st := engine.StoreFrom(ctx)
	if st == nil {
		return nil, nil, engine.Permanent(ErrNoStore)
	}
	ns := Namespace(s.User)
	if err := store.ValidateNamespace(ns); err != nil {
		return nil, nil, engine.Permanent(fmt.Errorf("user %q cannot name a memory namespace: %w", s.User, err))
	}
	return st, ns, nil
}

// factKey derives the key from the text, so telling the assistant the
// same fact twice stores it once.
func factKey(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "fact-" + hex.EncodeToString(sum[:8])
}

func remember(ctx context.Context, s State) (engine.Output, error) {
	if len(s.Facts) == 0 {
		return nil, nil
	}
	st, ns, err := userStore(ctx, s)
	if err != nil {
		return nil, err
	}
	ops := make([]store.Op, 0, len(s.Facts))
	for _, f := range s.Facts {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		ops = append(ops, store.PutOp{
			Namespace: ns, Key: factKey(f),
			Value: map[string]any{factField: f},
			// Embed the text itself whatever the store's default fields.
			Index: []string{factField},
		})
	}
	if _, err := st.Batch(ctx, ops); err != nil {
		return nil, fmt.Errorf("remember: %w", err)
	}
	// The facts are stored; clear them so a later turn on this thread
	// does not store them again.
	return engine.Update{"facts": []string{}}, nil
}

func recall(ctx context.Context, s State, limit int) (engine.Output, error) {
	st, ns, err := userStore(ctx, s)
	if err != nil {
		return nil, err
	}
	items, err := store.Search(ctx, st, store.SearchOp{NamespacePrefix: ns, Query: s.Question, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	mems := make([]Memory, 0, len(items))
	for _, it := range items {
		text, _ := it.Value[factField].(string)
		m := Memory{Key: it.Key, Text: text}
		if it.Score != nil {
			m.Score = *it.Score
		}
		mems = append(mems, m)
	}
	return engine.Update{"recalled": mems}, nil
}

func answer(ctx context.Context, model Model, s State) (engine.Output, error) {
	var b strings.Builder
	b.WriteString(answerPrompt)
	b.WriteString("Question: " + s.Question + "\n")
	b.WriteString("Memories, most relevant first:\n")
	for i, m := range s.Recalled {
		fmt.Fprintf(&b, "%d. %s\n", i+1, m.Text)
	}
	reply, err := model.Complete(ctx, b.String())
	if err != nil {
		return nil, fmt.Errorf("answer: %w", err)
	}
	return engine.Update{"answer": strings.TrimSpace(reply)}, nil
}
