package mapreduce

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

// ErrEmptyDocument is returned when the input document has no text.
var ErrEmptyDocument = errors.New("document is empty")

// Section is one part of the document: what a Send hands a summarise task
// as its whole input.
type Section struct {
	Index   int    `json:"index"`
	Heading string `json:"heading"`
	Text    string `json:"text"`
}

// Summary is a worker's result for one section.
type Summary struct {
	Index   int    `json:"index"`
	Heading string `json:"heading"`
	Text    string `json:"text"`
}

// State is the run's state.
type State struct {
	// Document is the input: Markdown, split at "## " headings.
	Document string `json:"document"`
	// Sections are the planner's split, in document order.
	Sections []Section `json:"sections"`
	// Summaries collects the workers' results. The append reducer folds
	// them in Send order, not completion order.
	Summaries []Summary `json:"summaries" reduce:"append"`
	// Digest is the combined result.
	Digest string `json:"digest"`
}

// Options configure the graph. The zero value summarises with a
// ScriptedModel, without persistence.
type Options struct {
	// Model writes the section summaries; nil means a new ScriptedModel.
	Model Model
	// Checkpointer, Cache and Store are passed to Compile.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// Node names.
const (
	NodePlan      = "plan"
	NodeSummarise = "summarise"
	NodeCombine   = "combine"
)

// Input is the run input that summarises document.
func Input(document string) engine.Update { return engine.Update{"document": document} }

// New builds the map-reduce summariser: plan splits the document, a
// conditional edge Sends one summarise task per section (they run in
// parallel, in one superstep), and combine runs once, after all of them.
func New(opts Options) (*engine.Graph[State], error) {
	model := opts.Model
	if model == nil {
		model = NewScriptedModel()
	}
	g := engine.NewStateGraph[State]()
	// SendTargets tells drawings and lint where fanOut's Sends go.
	g.AddNode(NodePlan, plan, engine.SendTargets(NodeSummarise))
	engine.AddNodeFunc(g, NodeSummarise, func(ctx context.Context, sec Section) (engine.Output, error) {
		return summarise(ctx, model, sec)
	})
	g.AddNode(NodeCombine, combine)
	g.AddEdge(engine.Start, NodePlan)
	g.AddConditionalEdges(NodePlan, fanOut, nil)
	// All summarise tasks run in the same superstep, so this plain edge
	// triggers combine exactly once.
	g.AddEdge(NodeSummarise, NodeCombine)
	g.AddEdge(NodeCombine, engine.End)
	return g.Compile(engine.CompileOptions{Name: "mapreduce", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
}

// plan splits the document at level-two headings. Text before the first
// heading is a section of its own, the introduction.
func plan(_ context.Context, s State) (engine.Output, error) {
	if strings.TrimSpace(s.Document) == "" {
		return nil, engine.Permanent(ErrEmptyDocument)
	}
	var sections []Section
	cur := Section{Heading: "Introduction"}
	var text strings.Builder
	flush := func() {
		cur.Text = strings.TrimSpace(text.String())
		if cur.Text != "" {
			cur.Index = len(sections)
			sections = append(sections, cur)
		}
		text.Reset()
	}
	for line := range strings.Lines(s.Document) {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			flush()
			cur = Section{Heading: strings.TrimSpace(h)}
			continue
		}
		if strings.HasPrefix(line, "# ") && len(sections) == 0 && text.Len() == 0 {
			continue // the document title is not a section
		}
		text.WriteString(line)
	}
	flush()
	if len(sections) == 0 {
		return nil, engine.Permanent(fmt.Errorf("%w: it has headings but no text under them", ErrEmptyDocument))
	}
	return engine.Update{"sections": sections}, nil
}

// fanOut maps every section to a summarise task.
func fanOut(_ context.Context, s State) (engine.Route, error) {
	sends := make([]engine.Send, len(s.Sections))
	for i, sec := range s.Sections {
		sends[i] = engine.Send{Node: NodeSummarise, Arg: sec}
	}
	return engine.SendTo(sends...), nil
}

func summarise(ctx context.Context, model Model, sec Section) (engine.Output, error) {
	reply, err := model.Complete(ctx, summarisePrompt+"Heading: "+sec.Heading+"\n\n"+sec.Text+"\n")
	if err != nil {
		return nil, fmt.Errorf("summarise section %d (%q): %w", sec.Index, sec.Heading, err)
	}
	return engine.Update{"summaries": Summary{Index: sec.Index, Heading: sec.Heading, Text: strings.TrimSpace(reply)}}, nil
}

// combine writes the digest: one line per section, in the order the
// reducer left them, which is document order.
func combine(_ context.Context, s State) (engine.Output, error) {
	var b strings.Builder
	for _, sum := range s.Summaries {
		fmt.Fprintf(&b, "- %s: %s\n", sum.Heading, sum.Text)
	}
	return engine.Update{"digest": b.String()}, nil
}
