package researchsubgraph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

// ErrNoQuestion is returned for a run without a question.
var ErrNoQuestion = errors.New("no question")

// State is the assistant's state: the question, how it was routed, and the
// answer. Question, Answer and Sources are shared with the research
// subgraph: they are what crosses the boundary in both directions.
type State struct {
	Question string `json:"question"`
	// Route is RouteQuick or RouteResearch.
	Route  string `json:"route"`
	Answer string `json:"answer"`
	// Sources are the ids of the documents a researched answer cites.
	Sources []string `json:"sources"`
}

// Routes the classifier chooses between.
const (
	RouteQuick    = "quick"
	RouteResearch = "research"
)

// Finding is a document a search turned up, with the query that found it.
type Finding struct {
	Query string `json:"query"`
	Document
}

// ResearchState is the research subgraph's own state. Only the keys it
// shares with State (question, answer, sources) come in from the parent
// and go back; the plan and the findings stay in the subgraph's
// checkpoints, where GetStateWith(…, Subgraphs: true) shows them.
type ResearchState struct {
	Question string `json:"question"`
	// Queries is the plan, plus any follow-up searches the reviewer asked
	// for; Searched counts the queries already run.
	Queries  []string  `json:"queries"`
	Searched int       `json:"searched"`
	Findings []Finding `json:"findings"`
	// Approved is set when the reviewer accepts the findings.
	Approved bool     `json:"approved"`
	Answer   string   `json:"answer"`
	Sources  []string `json:"sources"`
}

// Review is the interrupt payload of the review node.
type Review struct {
	Question string    `json:"question"`
	Findings []Finding `json:"findings"`
	// Problem says why the previous answer was not understood; empty on
	// the first ask.
	Problem string `json:"problem,omitempty"`
}

// Options configure the graphs.
type Options struct {
	// Model classifies, answers quick questions, plans and summarises;
	// nil means ScriptedModel.
	Model Model
	// Searcher runs the planned queries; nil means DefaultLibrary.
	Searcher Searcher
	// PerQuery is how many documents a query keeps (0 means 2).
	PerQuery int
	// Checkpointer, Cache and Store are passed to Compile. The research
	// subgraph is compiled without a checkpointer of its own, so it
	// checkpoints into the parent's, in a namespace of its own; answering
	// its review needs one.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// Node names of the parent graph.
const (
	NodeClassify    = "classify"
	NodeQuickAnswer = "quick_answer"
	NodeResearch    = "research"
)

// Node names of the research subgraph.
const (
	NodePlan      = "plan"
	NodeSearch    = "search"
	NodeReview    = "review"
	NodeSummarise = "summarise"
)

// maxQueries caps a plan, so a rambling model cannot start a search storm.
const maxQueries = 5

// Input is the run input for a question.
func Input(question string) engine.Update {
	return engine.Update{"question": question}
}

func (o Options) withDefaults() Options {
	if o.Model == nil {
		o.Model = ScriptedModel{}
	}
	if o.Searcher == nil {
		o.Searcher = DefaultLibrary
	}
	if o.PerQuery <= 0 {
		o.PerQuery = 2
	}
	return o
}

// New builds the assistant: classify routes the question to quick_answer
// or to research, the research subgraph (NewResearch) added as a node.
func New(opts Options) (*engine.Graph[State], error) {
	opts = opts.withDefaults()
	research, err := NewResearch(Options{Model: opts.Model, Searcher: opts.Searcher, PerQuery: opts.PerQuery, Cache: opts.Cache, Store: opts.Store})
	if err != nil {
		return nil, err
	}
	model := opts.Model
	g := engine.NewStateGraph[State]()
	g.AddNode(NodeClassify, func(ctx context.Context, s State) (engine.Output, error) {
		q, err := question(s.Question)
		if err != nil {
			return nil, err
		}
		reply, err := model.Complete(ctx, classifyPrompt+"Question: "+q+"\n")
		if err != nil {
			return nil, fmt.Errorf("classify: %w", err)
		}
		switch r := strings.ToLower(strings.Trim(reply, " \n.")); r {
		case RouteQuick, RouteResearch:
			// A new question on the thread starts without the previous
			// answer's sources.
			return engine.Update{"route": r, "answer": "", "sources": []string{}}, nil
		default:
			return nil, fmt.Errorf("classify: the model replied %q, want %q or %q", reply, RouteQuick, RouteResearch)
		}
	})
	g.AddNode(NodeQuickAnswer, func(ctx context.Context, s State) (engine.Output, error) {
		reply, err := model.Complete(ctx, quickPrompt+"Question: "+s.Question+"\n")
		if err != nil {
			return nil, fmt.Errorf("quick answer: %w", err)
		}
		return engine.Update{"answer": strings.TrimSpace(reply)}, nil
	})
	g.AddSubgraph(NodeResearch, research)
	g.AddEdge(engine.Start, NodeClassify)
	g.AddConditionalEdges(NodeClassify, func(_ context.Context, s State) (engine.Route, error) {
		return engine.To(s.Route), nil
	}, map[string]string{RouteQuick: NodeQuickAnswer, RouteResearch: NodeResearch})
	g.AddEdge(NodeQuickAnswer, engine.End)
	g.AddEdge(NodeResearch, engine.End)
	return g.Compile(engine.CompileOptions{Name: "researchsubgraph", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
}

// NewResearch builds the research subgraph on its own: plan, search,
// review by a person (who may send it back to search for more), then
// summarise. New adds it to the assistant; it also runs standalone.
func NewResearch(opts Options) (*engine.Graph[ResearchState], error) {
	opts = opts.withDefaults()
	r := researcher{model: opts.Model, search: opts.Searcher, perQuery: opts.PerQuery}
	g := engine.NewStateGraph[ResearchState]()
	g.AddNode(NodePlan, r.plan)
	g.AddNode(NodeSearch, r.searchAll)
	g.AddNode(NodeReview, review)
	g.AddNode(NodeSummarise, r.summarise)
	g.AddEdge(engine.Start, NodePlan)
	g.AddEdge(NodePlan, NodeSearch)
	g.AddEdge(NodeSearch, NodeReview)
	g.AddConditionalEdges(NodeReview, func(_ context.Context, s ResearchState) (engine.Route, error) {
		if s.Approved {
			return engine.To("good"), nil
		}
		return engine.To("more"), nil
	}, map[string]string{"good": NodeSummarise, "more": NodeSearch})
	g.AddEdge(NodeSummarise, engine.End)
	return g.Compile(engine.CompileOptions{Name: "research", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
}

func question(q string) (string, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return "", engine.Permanent(fmt.Errorf("%w: set \"question\" in the run input", ErrNoQuestion))
	}
	return q, nil
}

// researcher holds the subgraph's dependencies; its methods are nodes.
type researcher struct {
	model    Model
	search   Searcher
	perQuery int
}

func (r researcher) plan(ctx context.Context, s ResearchState) (engine.Output, error) {
	q, err := question(s.Question)
	if err != nil {
		return nil, err
	}
	reply, err := r.model.Complete(ctx, planPrompt+"Question: "+q+"\n")
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	var queries []string
	for line := range strings.Lines(reply) {
		// Models number or bullet their lists.
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•0123456789.) "))
		if line != "" && !slices.Contains(queries, line) && len(queries) < maxQueries {
			queries = append(queries, line)
		}
	}
	if len(queries) == 0 {
		queries = []string{q}
	}
	return engine.Update{"queries": queries, "searched": 0, "findings": []Finding{}, "approved": false}, nil
}

// searchAll runs the queries not searched yet and adds the documents not
// found before.
func (r researcher) searchAll(ctx context.Context, s ResearchState) (engine.Output, error) {
	findings := slices.Clone(s.Findings)
	for _, q := range s.Queries[min(s.Searched, len(s.Queries)):] {
		docs, err := r.search.Search(ctx, q, r.perQuery)
		if err != nil {
			return nil, fmt.Errorf("search %q: %w", q, err)
		}
		for _, d := range docs {
			if !slices.ContainsFunc(findings, func(f Finding) bool { return f.ID == d.ID }) {
				findings = append(findings, Finding{Query: q, Document: d})
			}
		}
	}
	return engine.Update{"findings": findings, "searched": len(s.Queries)}, nil
}

// approvals are the answers that accept the findings.
var approvals = []string{"yes", "y", "ok", "okay", "good", "approve", "approved", "lgtm"}

// review asks a person whether the findings are good enough. "yes" (or
// true) sends them to summarise; any other text is a follow-up query and
// sends the subgraph back to search. An answer that is neither is asked
// again with the reason, in the same node run (see Interrupt's replay).
func review(ctx context.Context, s ResearchState) (engine.Output, error) {
	problem := ""
	for {
		raw, err := engine.Interrupt(ctx, Review{
			Question: fmt.Sprintf("Are these %d findings good enough to answer %q? Answer yes to summarise them, or say what else to search for.", len(s.Findings), s.Question),
			Findings: s.Findings,
			Problem:  problem,
		})
		if err != nil {
			return nil, err
		}
		switch a := raw.(type) {
		case bool:
			if a {
				return engine.Update{"approved": true}, nil
			}
			problem = "invalid answer: false does not say what else to search for; answer with a search query instead"
		case string:
			text := strings.TrimSpace(a)
			switch {
			case slices.Contains(approvals, strings.ToLower(strings.TrimRight(text, ".!"))):
				return engine.Update{"approved": true}, nil
			case text == "":
				problem = "invalid answer: it is empty; answer yes or a search query"
			default:
				return engine.Update{"approved": false, "queries": append(slices.Clone(s.Queries), text)}, nil
			}
		default:
			problem = fmt.Sprintf("invalid answer: want yes or a search query (a string), got %T", raw)
		}
	}
}

func (r researcher) summarise(ctx context.Context, s ResearchState) (engine.Output, error) {
	var b strings.Builder
	b.WriteString(summarisePrompt)
	b.WriteString("Question: " + s.Question + "\n")
	b.WriteString("Findings:\n")
	sources := make([]string, 0, len(s.Findings))
	for _, f := range s.Findings {
		fmt.Fprintf(&b, "[%s] %s\n", f.ID, f.Text)
		sources = append(sources, f.ID)
	}
	reply, err := r.model.Complete(ctx, b.String())
	if err != nil {
		return nil, fmt.Errorf("summarise: %w", err)
	}
	return engine.Update{"answer": strings.TrimSpace(reply), "sources": sources}, nil
}
