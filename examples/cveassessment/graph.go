package cveassessment

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

// State is the assessment as it is built up. Each field is a channel of
// the graph, named by its json tag.
type State struct {
	// CVEID is the input: the CVE to assess.
	CVEID string `json:"cve_id"`
	// CVE and CVSS are the fetched records.
	CVE  CVERecord  `json:"cve"`
	CVSS CVSSRecord `json:"cvss"`
	// Weakness is the CWE's class, in words.
	Weakness string `json:"weakness"`
	// AttackSurface is the model's description of who can reach the flaw;
	// empty when skipped (no affected products listed).
	AttackSurface string `json:"attack_surface"`
	// Vendor is the supplier's CVSS statement; zero when skipped.
	Vendor VendorStatement `json:"vendor_statement"`
	// CVEContext and CVSSEvidence are the two branches' summaries, the
	// inputs of the join.
	CVEContext   string `json:"cve_context"`
	CVSSEvidence string `json:"cvss_evidence"`
	// Evidence is the normalised text the vector is generated from.
	Evidence string `json:"evidence"`
	// Vector is the generated CVSS v3.1 vector; Score and Severity follow
	// from it.
	Vector   string  `json:"vector"`
	Score    float64 `json:"score"`
	Severity string  `json:"severity"`
}

// Options configure the graph. The zero value runs offline on Fixtures and
// a ScriptedModel, without persistence.
type Options struct {
	// Fetcher supplies CVE, CVSS and vendor data; nil means Fixtures.
	Fetcher Fetcher
	// Model writes the attack surface and the vector; nil means a new
	// ScriptedModel.
	Model Model
	// Checkpointer, Cache and Store are passed to Compile.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// Node names, for tests and for the Studio's deep links.
const (
	NodeFetchCVE        = "fetch_cve"
	NodeFetchCVSS       = "fetch_cvss"
	NodeClassify        = "classify_weakness"
	NodeAttackSurface   = "generate_attack_surface"
	NodeCVEContext      = "build_cve_context"
	NodeVendorStatement = "fetch_vendor_statement"
	NodeCVSSEvidence    = "build_cvss_evidence"
	NodeNormalise       = "normalise"
	NodeGenerateVector  = "generate_vector"
	NodeScore           = "compute_score"
	NodeSeverity        = "rate_severity"
)

// Input is the run input that assesses the CVE id.
func Input(cveID string) engine.Update { return engine.Update{"cve_id": cveID} }

// New builds the assessment graph. The two branches (CVE → weakness →
// optional attack surface, and CVSS → optional vendor statement) take a
// different number of supersteps, so they meet at a join: normalise runs
// once, after both.
func New(opts Options) (*engine.Graph[State], error) {
	g := build(opts)
	g.AddJoin([]string{NodeCVEContext, NodeCVSSEvidence}, NodeNormalise)
	return g.Compile(compileOptions("cveassessment", opts))
}

// NewPlainFanIn builds the same graph with plain edges into normalise
// instead of the join: the mistake this example exists to show. Each
// branch's arrival triggers normalise on its own, so normalise and
// everything after it, the model call that generates the vector included,
// run once per arrival; the first time on half the evidence. The topology
// lint reports it (Graph.Warnings).
func NewPlainFanIn(opts Options) (*engine.Graph[State], error) {
	g := build(opts)
	g.AddEdge(NodeCVEContext, NodeNormalise)
	g.AddEdge(NodeCVSSEvidence, NodeNormalise)
	return g.Compile(compileOptions("cveassessment-plain-fan-in", opts))
}

func compileOptions(name string, opts Options) engine.CompileOptions {
	return engine.CompileOptions{Name: name, Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store}
}

// agent holds the graph's dependencies; its methods are the nodes.
type agent struct {
	fetch Fetcher
	model Model
}

// build adds every node and edge except those into normalise.
func build(opts Options) *engine.StateGraph[State] {
	a := &agent{fetch: opts.Fetcher, model: opts.Model}
	if a.fetch == nil {
		a.fetch = Fixtures{}
	}
	if a.model == nil {
		a.model = NewScriptedModel()
	}
	g := engine.NewStateGraph[State]()
	g.AddNode(NodeFetchCVE, a.fetchCVE)
	g.AddNode(NodeFetchCVSS, a.fetchCVSS)
	g.AddNode(NodeClassify, a.classify)
	g.AddNode(NodeAttackSurface, a.attackSurface)
	g.AddNode(NodeCVEContext, a.cveContext)
	g.AddNode(NodeVendorStatement, a.vendorStatement)
	g.AddNode(NodeCVSSEvidence, a.cvssEvidence)
	g.AddNode(NodeNormalise, a.normalise)
	g.AddNode(NodeGenerateVector, a.generateVector)
	g.AddNode(NodeScore, a.score)
	g.AddNode(NodeSeverity, a.severity)

	g.AddEdge(engine.Start, NodeFetchCVE)
	g.AddEdge(engine.Start, NodeFetchCVSS)

	g.AddEdge(NodeFetchCVE, NodeClassify)
	g.AddConditionalEdges(NodeClassify, routeAttackSurface, map[string]string{
		"generate": NodeAttackSurface,
		"skip":     NodeCVEContext,
	})
	g.AddEdge(NodeAttackSurface, NodeCVEContext)

	g.AddConditionalEdges(NodeFetchCVSS, routeVendor, map[string]string{
		"fetch": NodeVendorStatement,
		"skip":  NodeCVSSEvidence,
	})
	g.AddEdge(NodeVendorStatement, NodeCVSSEvidence)

	g.AddSequence(NodeNormalise, NodeGenerateVector, NodeScore, NodeSeverity)
	g.AddEdge(NodeSeverity, engine.End)
	return g
}

// routeAttackSurface generates an attack surface only when the record
// names affected products: without them the model has nothing concrete to
// describe and would invent.
func routeAttackSurface(_ context.Context, s State) (engine.Route, error) {
	if len(s.CVE.Products) == 0 {
		return engine.To("skip"), nil
	}
	return engine.To("generate"), nil
}

// routeVendor fetches a vendor statement only when the database says one
// exists.
func routeVendor(_ context.Context, s State) (engine.Route, error) {
	if s.CVSS.Vendor == "" {
		return engine.To("skip"), nil
	}
	return engine.To("fetch"), nil
}

// fetchErr marks lookups that cannot succeed on retry (unknown ids) as
// permanent, so a retry policy does not hammer the source.
func fetchErr(what string, err error) error {
	err = fmt.Errorf("fetch %s: %w", what, err)
	if errors.Is(err, ErrUnknownCVE) {
		return engine.Permanent(err)
	}
	return err
}

var cveIDPattern = regexp.MustCompile(`^CVE-\d{4}-\d{4,}$`)

func checkID(id string) error {
	if !cveIDPattern.MatchString(id) {
		return engine.Permanent(fmt.Errorf("cve_id %q is not a CVE id (want CVE-YYYY-NNNN)", id))
	}
	return nil
}

func (a *agent) fetchCVE(ctx context.Context, s State) (engine.Output, error) {
	if err := checkID(s.CVEID); err != nil {
		return nil, err
	}
	rec, err := a.fetch.CVE(ctx, s.CVEID)
	if err != nil {
		return nil, fetchErr("CVE record", err)
	}
	return engine.Update{"cve": rec}, nil
}

func (a *agent) fetchCVSS(ctx context.Context, s State) (engine.Output, error) {
	if err := checkID(s.CVEID); err != nil {
		return nil, err
	}
	rec, err := a.fetch.CVSS(ctx, s.CVEID)
	if err != nil {
		return nil, fetchErr("CVSS data", err)
	}
	return engine.Update{"cvss": rec}, nil
}

// weaknessClasses names the CWEs the fixtures use; a real deployment
// would load the CWE catalogue.
var weaknessClasses = map[string]string{
	"CWE-125": "out-of-bounds read",
	"CWE-200": "exposure of sensitive information",
	"CWE-502": "deserialisation of untrusted data",
	"CWE-787": "out-of-bounds write",
}

func (a *agent) classify(_ context.Context, s State) (engine.Output, error) {
	class, ok := weaknessClasses[s.CVE.CWE]
	if !ok {
		class = "unclassified weakness"
	}
	return engine.Update{"weakness": fmt.Sprintf("%s (%s)", class, s.CVE.CWE)}, nil
}

func (a *agent) attackSurface(ctx context.Context, s State) (engine.Output, error) {
	prompt := attackSurfacePrompt + s.CVE.ID + ".\n" +
		"Products: " + strings.Join(s.CVE.Products, "; ") + "\n" +
		"Weakness: " + s.Weakness + "\n" +
		"Description: " + s.CVE.Description + "\n"
	text, err := a.model.Complete(ctx, prompt)
	if err != nil {
		return nil, fmt.Errorf("attack surface: %w", err)
	}
	return engine.Update{"attack_surface": strings.TrimSpace(text)}, nil
}

func (a *agent) cveContext(_ context.Context, s State) (engine.Output, error) {
	surface := s.AttackSurface
	if surface == "" {
		surface = "not generated (the record lists no affected products)"
	}
	return engine.Update{"cve_context": "CVE: " + s.CVE.ID + "\n" +
		"Weakness: " + s.Weakness + "\n" +
		"Description: " + s.CVE.Description + "\n" +
		"Attack surface: " + surface + "\n"}, nil
}

func (a *agent) vendorStatement(ctx context.Context, s State) (engine.Output, error) {
	st, err := a.fetch.VendorStatement(ctx, s.CVSS.Vendor, s.CVEID)
	if err != nil {
		return nil, fetchErr("vendor statement", err)
	}
	return engine.Update{"vendor_statement": st}, nil
}

func (a *agent) cvssEvidence(_ context.Context, s State) (engine.Output, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "database vector (%s): %s\n", s.CVSS.Source, s.CVSS.Vector)
	if s.Vendor.Vector != "" {
		fmt.Fprintf(&b, "vendor vector (%s): %s\n", s.Vendor.Vendor, s.Vendor.Vector)
		fmt.Fprintf(&b, "vendor note: %s\n", s.Vendor.Note)
	}
	return engine.Update{"cvss_evidence": b.String()}, nil
}

// normalise puts both branches' evidence in one canonical form: vectors
// in the specification's metric order (unparsable ones flagged rather
// than dropped), and a marker for a branch that has not arrived, which is
// what the plain fan-in variant's first pass sees.
func (a *agent) normalise(_ context.Context, s State) (engine.Output, error) {
	cveCtx := s.CVEContext
	if cveCtx == "" {
		cveCtx = "CVE context: not available yet\n"
	}
	cvssEv := s.CVSSEvidence
	if cvssEv == "" {
		cvssEv = "CVSS evidence: not available yet\n"
	}
	var b strings.Builder
	b.WriteString(cveCtx)
	for line := range strings.Lines(cvssEv) {
		label, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if ok && strings.Contains(label, "vector") {
			if v, err := ParseVector(strings.TrimSpace(value)); err == nil {
				value = v.String()
			} else {
				value += " (unparsable: " + err.Error() + ")"
			}
			line = label + ": " + value + "\n"
		}
		b.WriteString(line)
	}
	return engine.Update{"evidence": b.String()}, nil
}

var vectorInText = regexp.MustCompile(`CVSS:3\.1/[A-Z:/]+[A-Z]`)

func (a *agent) generateVector(ctx context.Context, s State) (engine.Output, error) {
	reply, err := a.model.Complete(ctx, vectorPrompt+s.CVEID+".\n"+s.Evidence+"Reply with the vector.\n")
	if err != nil {
		return nil, fmt.Errorf("generate vector: %w", err)
	}
	vector := vectorInText.FindString(reply)
	if vector == "" {
		// A model can answer in prose; another attempt may do better, so
		// this error stays retryable.
		return nil, fmt.Errorf("generate vector: the model's reply has no CVSS:3.1 vector: %q", reply)
	}
	return engine.Update{"vector": vector}, nil
}

func (a *agent) score(_ context.Context, s State) (engine.Output, error) {
	v, err := ParseVector(s.Vector)
	if err != nil {
		return nil, engine.Permanent(fmt.Errorf("score: %w", err))
	}
	return engine.Update{"score": v.BaseScore()}, nil
}

func (a *agent) severity(_ context.Context, s State) (engine.Output, error) {
	return engine.Update{"severity": Severity(s.Score)}, nil
}
