package examples

import (
	"fmt"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cachedlookup"
	"github.com/superstep-dev/superstep/examples/cveagent"
	"github.com/superstep-dev/superstep/examples/cveassessment"
	"github.com/superstep-dev/superstep/examples/flakyservice"
	"github.com/superstep-dev/superstep/examples/mapreduce"
	"github.com/superstep-dev/superstep/examples/memoryagent"
	"github.com/superstep-dev/superstep/examples/pregellowlevel"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
	"github.com/superstep-dev/superstep/examples/transferapproval"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/store"
)

// Registry names of the examples, stable across releases: the Studio uses
// them in URLs.
const (
	CVEAssessment           = "cve-assessment"
	CVEAssessmentPlainFanIn = "cve-assessment-plain-fanin"
	CVEAgent                = "cve-agent"
	TransferApproval        = "transfer-approval"
	MapReduce               = "map-reduce"
	CachedLookup            = "cached-lookup"
	FlakyService            = "flaky-service"
	ResearchSubgraph        = "research-subgraph"
	MemoryAgent             = "memory-agent"
	PregelLowLevel          = "pregel-lowlevel"
)

// Options are the backends every example is compiled with.
type Options struct {
	// Checkpointer saves every example's threads; nil compiles them
	// without one (the interrupting examples then cannot be resumed).
	Checkpointer checkpoints.Saver
	// Cache is the node cache; nil leaves cached-lookup with a memory
	// cache of its own (the example is about caching) and the others
	// without one.
	Cache cache.Cache
	// Store is the long-term memory; nil leaves memory-agent with a memory
	// store of its own. A store given here needs a semantic index over
	// the "text" field for memory-agent's recall (memoryagent.NewStore
	// builds such a memory store).
	Store store.Store
	// Model is the chat model of the examples built on one (cve-agent);
	// nil gives each the offline model with its own responder. Build it
	// with modelenv.Load(modelenv.Config{Respond: examples.Respond}), so
	// the offline model (when no key is set) can drive their tool loops.
	Model models.ChatModel
}

// Respond answers the offline model's requests for every example built
// on a chat model (modelenv.Config.Respond): each example's responder
// in turn, until one recognises the request.
func Respond(r localprovider.Request) (localprovider.Turn, bool) {
	for _, respond := range []func(localprovider.Request) (localprovider.Turn, bool){cveagent.Respond} {
		if t, ok := respond(r); ok {
			return t, true
		}
	}
	return localprovider.Turn{}, false
}

// Example is one entry of the registry: a graph's name, how to build it,
// and an input it runs from.
type Example struct {
	// Name is the registry name (one of the constants above).
	Name string
	// Input is a run input as the Studio's start form sends it: a JSON
	// object keyed by state field (channel), built only from JSON types
	// (string, float64, bool, []any, map[string]any), so it survives the
	// trip through the form unchanged. Run from a fresh thread it reaches
	// the graph's end or an interrupt without error (registry_test.go
	// checks each). The Studio prefills the start form with it and runs
	// it from the "Try it" button.
	Input map[string]any
	build func(Options) (engine.Compiled, error)
}

// Build compiles the example with opts.
func (e Example) Build(opts Options) (engine.Compiled, error) { return e.build(opts) }

// Examples lists every example in the registry, sorted by name. Each call
// returns fresh inputs, so a caller may change them.
func Examples() []Example {
	return []Example{
		{Name: CachedLookup, Input: map[string]any{"pair": "EUR/USD", "amount": 120.0},
			build: func(o Options) (engine.Compiled, error) {
				return cachedlookup.New(cachedlookup.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: CVEAgent, Input: map[string]any{"cve_id": "CVE-2021-44228"},
			build: func(o Options) (engine.Compiled, error) {
				return cveagent.New(cveagent.Options{Model: o.Model, Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: CVEAssessment, Input: map[string]any{"cve_id": "CVE-2021-44228"},
			build: func(o Options) (engine.Compiled, error) {
				return cveassessment.New(cveassessment.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: CVEAssessmentPlainFanIn, Input: map[string]any{"cve_id": "CVE-2014-0160"},
			build: func(o Options) (engine.Compiled, error) {
				return cveassessment.NewPlainFanIn(cveassessment.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: FlakyService, Input: map[string]any{"invoice_id": "in_1002"},
			build: func(o Options) (engine.Compiled, error) {
				return flakyservice.New(flakyservice.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: MapReduce, Input: map[string]any{"document": "## Plan\nShip on Friday. Then rest.\n## Risks\nThe vendor may slip. We have a fallback.\n## Budget\nWe stay within the quarter's budget. Travel is extra.\n"},
			build: func(o Options) (engine.Compiled, error) {
				return mapreduce.New(mapreduce.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: MemoryAgent, Input: map[string]any{"user": "ana", "facts": []any{"I drive a blue electric car.", "I work as a nurse on night shifts."},
			"question": "What kind of vehicle do I own?"},
			build: func(o Options) (engine.Compiled, error) {
				return memoryagent.New(memoryagent.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		// The low-level graph's input is the raw value of its "input" channel.
		{Name: PregelLowLevel, Input: map[string]any{"input": 123.0},
			build: func(o Options) (engine.Compiled, error) {
				return pregellowlevel.New(pregellowlevel.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: ResearchSubgraph, Input: map[string]any{"question": "Compare Postgres and SQLite for a multi-user web app"},
			build: func(o Options) (engine.Compiled, error) {
				return researchsubgraph.New(researchsubgraph.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
		{Name: TransferApproval, Input: map[string]any{"request": "Please send 2,500 to Alice Martin for the March invoice."},
			build: func(o Options) (engine.Compiled, error) {
				return transferapproval.New(transferapproval.Options{Checkpointer: o.Checkpointer, Cache: o.Cache, Store: o.Store})
			}},
	}
}

// Inputs is every example's input by registry name (see Example.Input),
// for studio.Config.Inputs.
func Inputs() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range Examples() {
		out[e.Name] = e.Input
	}
	return out
}

// All compiles every example with opts and returns them by registry name,
// with their scripted models and fixtures, so they run without network
// access (cve-agent too, unless opts.Model is a real provider's).
//
// pregel-lowlevel is built with the low-level API; its input is the raw
// value of its "input" channel, given in the Studio as {"input": 123}.
func All(opts Options) (map[string]engine.Compiled, error) {
	exs := Examples()
	out := make(map[string]engine.Compiled, len(exs))
	for _, e := range exs {
		g, err := e.build(opts)
		if err != nil {
			return nil, fmt.Errorf("example %s: %w", e.Name, err)
		}
		out[e.Name] = g
	}
	return out, nil
}
