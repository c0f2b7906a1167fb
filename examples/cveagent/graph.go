package cveagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cveassessment"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/modelenv"
	"github.com/superstep-dev/superstep/store"
)

// ApprovalAbove is the base score above which an assessment waits for a
// person's approval before it is published.
const ApprovalAbove = 9.0

// Node names of the outer graph.
const (
	NodeAsk     = "ask"
	NodeAnalyst = "analyst" // the ReAct agent, a subgraph
	NodeAssess  = "assess"
	NodeReview  = "review"
	NodePublish = "publish"
)

// Decisions: how an assessment came to be published, or not.
const (
	DecisionAuto     = "auto-published" // at or under ApprovalAbove
	DecisionApproved = "approved"       // a person approved it as it was
	DecisionEdited   = "edited"         // a person changed the severity
	DecisionRejected = "rejected"       // a person rejected it: not published
)

// ErrNotScored is the assess node's error when the agent ended without a
// successful score_cvss call, so there is no score to publish.
var ErrNotScored = errors.New("cveagent: the agent did not score a vector")

// State is one CVE on its way to a published assessment.
type State struct {
	// CVEID is the input: the CVE to assess.
	CVEID string `json:"cve_id"`
	// Messages is the agent's conversation (the Studio's chat view).
	Messages []models.Message `json:"messages" reduce:"add_messages"`
	// Vector, Score and Severity are the assessment, read from the
	// agent's last score_cvss result (the score computed again from the
	// vector); Summary is the agent's last reply.
	Vector   string  `json:"vector"`
	Score    float64 `json:"score"`
	Severity string  `json:"severity"`
	Summary  string  `json:"summary"`
	// Decision is one of the Decision constants; Reason a reviewer's
	// words.
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// Published is the published assessment; nil until publish runs,
	// and after a rejection.
	Published *Published `json:"published"`
}

// Published is an assessment as published.
type Published struct {
	CVEID    string  `json:"cve_id"`
	Vector   string  `json:"vector"`
	Score    float64 `json:"score"`
	Severity string  `json:"severity"`
	Summary  string  `json:"summary"`
	Decision string  `json:"decision"`
}

// Options configure New.
type Options struct {
	// Model is the agent's chat model; nil is the offline model with
	// Respond (modelenv.Offline). Give modelenv.Load(modelenv.Config{
	// Respond: cveagent.Respond}) to use a real provider when a key is
	// set.
	Model models.ChatModel
	// Fetcher gives the agent's tools their facts; nil is
	// cveassessment.Fixtures.
	Fetcher cveassessment.Fetcher
	// Checkpointer, Cache and Store are passed to Compile. The review
	// needs a Checkpointer: the run stops there and resumes from it.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// Prompt is the agent's system prompt.
const Prompt = `You are a product security analyst. Assess the CVE the user names:
fetch its record (fetch_cve) and its CVSS data (fetch_cvss); when fetch_cvss
names a vendor, read the vendor's statement (fetch_vendor_statement) and prefer
its vector, as it knows the product's defaults. Then score the vector you chose
with score_cvss: never compute a score yourself. Finish with two or three
sentences: what the flaw is, the vector, the score and the severity.`

// Input is the run input for a CVE id.
func Input(cveID string) engine.Update { return engine.Update{"cve_id": cveID} }

// New compiles the graph: ask → analyst (the ReAct agent) → assess →
// review (above ApprovalAbove) → publish. See the package doc.
func New(opts Options) (*engine.Graph[State], error) {
	model := opts.Model
	if model == nil {
		m, err := modelenv.Offline(Respond)
		if err != nil {
			return nil, err
		}
		model = m
	}
	fetcher := opts.Fetcher
	if fetcher == nil {
		fetcher = cveassessment.Fixtures{}
	}
	tools, err := Tools(fetcher)
	if err != nil {
		return nil, err
	}
	analyst, err := agents.NewReactAgent(model, tools, &agents.ReactOptions{
		Name:     "cve_analyst",
		Prompt:   Prompt,
		ToolNode: &agents.ToolNodeOptions{HandleErrors: agents.HandleAllErrors},
	})
	if err != nil {
		return nil, err
	}
	g := engine.NewStateGraph[State]()
	g.AddNode(NodeAsk, ask)
	g.AddSubgraph(NodeAnalyst, analyst)
	g.AddNode(NodeAssess, assess)
	g.AddNode(NodeReview, review, engine.Destinations(NodePublish, engine.End))
	g.AddNode(NodePublish, publish)
	g.AddEdge(engine.Start, NodeAsk).AddEdge(NodeAsk, NodeAnalyst).AddEdge(NodeAnalyst, NodeAssess)
	g.AddConditionalEdges(NodeAssess, routeScore, map[string]string{NodeReview: NodeReview, NodePublish: NodePublish})
	g.AddEdge(NodePublish, engine.End)
	return g.Compile(engine.CompileOptions{Name: "cveagent", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
}

// ask turns the input into the user's message to the agent.
func ask(_ context.Context, s State) (engine.Output, error) {
	id := strings.TrimSpace(s.CVEID)
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("cve_id: %w", err)
	}
	return engine.Update{"cve_id": id, "messages": models.Human(fmt.Sprintf("Assess %s and rate its severity.", id))}, nil
}

// assess reads the assessment from the agent's last successful
// score_cvss result and scores its vector again, so the published score
// is the calculator's, whatever the model wrote.
func assess(_ context.Context, s State) (engine.Output, error) {
	var vector string
	for i := len(s.Messages) - 1; i >= 0 && vector == ""; i-- {
		m := s.Messages[i]
		if m.Type != models.TypeTool || m.Name != ToolScoreCVSS || m.Status == models.StatusError {
			continue
		}
		var sc Score
		if json.Unmarshal([]byte(m.Text()), &sc) == nil {
			vector = sc.Vector
		}
	}
	summary := lastAIText(s.Messages)
	if vector == "" {
		return nil, fmt.Errorf("%w for %s (score_cvss never succeeded); its last reply: %q", ErrNotScored, s.CVEID, summary)
	}
	sc, err := ScoreVector(vector)
	if err != nil {
		return nil, fmt.Errorf("cveagent: the scored vector %q: %w", vector, err)
	}
	return engine.Update{"vector": sc.Vector, "score": sc.BaseScore, "severity": sc.Severity, "summary": summary}, nil
}

func lastAIText(msgs []models.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == models.TypeAI {
			if t := strings.TrimSpace(msgs[i].Text()); t != "" {
				return t
			}
		}
	}
	return ""
}

// routeScore sends scores above ApprovalAbove to review.
func routeScore(_ context.Context, s State) (engine.Route, error) {
	if s.Score > ApprovalAbove {
		return engine.To(NodeReview), nil
	}
	return engine.To(NodePublish), nil
}

// publish writes the published assessment.
func publish(_ context.Context, s State) (engine.Output, error) {
	decision := s.Decision
	if decision == "" {
		decision = DecisionAuto
	}
	return engine.Update{"decision": decision, "published": &Published{
		CVEID: s.CVEID, Vector: s.Vector, Score: s.Score, Severity: s.Severity, Summary: s.Summary, Decision: decision,
	}}, nil
}
