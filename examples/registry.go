package examples

import (
	"fmt"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cachedlookup"
	"github.com/superstep-dev/superstep/examples/cveassessment"
	"github.com/superstep-dev/superstep/examples/flakyservice"
	"github.com/superstep-dev/superstep/examples/mapreduce"
	"github.com/superstep-dev/superstep/examples/memoryagent"
	"github.com/superstep-dev/superstep/examples/pregellowlevel"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
	"github.com/superstep-dev/superstep/examples/transferapproval"
	"github.com/superstep-dev/superstep/store"
)

// Registry names of the examples, stable across releases: the Studio uses
// them in URLs.
const (
	CVEAssessment           = "cve-assessment"
	CVEAssessmentPlainFanIn = "cve-assessment-plain-fanin"
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
}

// All compiles every example with opts and returns them by registry name,
// with their scripted models and fixtures, so they run without network
// access.
//
// pregel-lowlevel is built with the low-level API; its input is the raw
// value of its "input" channel, given in the Studio as {"input": 123}.
func All(opts Options) (map[string]engine.Compiled, error) {
	type build func() (engine.Compiled, error)
	builders := map[string]build{
		CVEAssessment: func() (engine.Compiled, error) {
			return cveassessment.New(cveassessment.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		CVEAssessmentPlainFanIn: func() (engine.Compiled, error) {
			return cveassessment.NewPlainFanIn(cveassessment.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		TransferApproval: func() (engine.Compiled, error) {
			return transferapproval.New(transferapproval.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		MapReduce: func() (engine.Compiled, error) {
			return mapreduce.New(mapreduce.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		CachedLookup: func() (engine.Compiled, error) {
			return cachedlookup.New(cachedlookup.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		FlakyService: func() (engine.Compiled, error) {
			return flakyservice.New(flakyservice.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		ResearchSubgraph: func() (engine.Compiled, error) {
			return researchsubgraph.New(researchsubgraph.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		PregelLowLevel: func() (engine.Compiled, error) {
			return pregellowlevel.New(pregellowlevel.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
		MemoryAgent: func() (engine.Compiled, error) {
			return memoryagent.New(memoryagent.Options{Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
		},
	}
	out := make(map[string]engine.Compiled, len(builders))
	for name, b := range builders {
		g, err := b()
		if err != nil {
			return nil, fmt.Errorf("example %s: %w", name, err)
		}
		out[name] = g
	}
	return out, nil
}
