package flakyservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

// State is one invoice being reconciled.
type State struct {
	// InvoiceID is the input.
	InvoiceID string  `json:"invoice_id"`
	Invoice   Invoice `json:"invoice"`
	// Attempts is the attempt on which the fetch succeeded (1 = first
	// try), from engine.Attempt.
	Attempts int `json:"attempts"`
	// Status is "settled" or "outstanding".
	Status string `json:"status"`
}

// Options configure the graph.
type Options struct {
	// API is the provider; nil means NewFlakyAPI(2), which fails twice per
	// invoice before answering.
	API InvoiceAPI
	// Retry is the fetch node's policy; nil means DefaultRetry.
	Retry *engine.RetryPolicy
	// Checkpointer, Cache and Store are passed to Compile.
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
}

// DefaultRetry is the fetch policy for a provider that sheds load: up to
// four attempts, waiting 200ms, 400ms, 800ms plus up to a second of
// jitter, so that many clients retrying together spread out.
func DefaultRetry() engine.RetryPolicy {
	return engine.RetryPolicy{InitialInterval: 200 * time.Millisecond, BackoffFactor: 2, MaxInterval: 5 * time.Second, MaxAttempts: 4, Jitter: true}
}

// Node names.
const (
	NodeFetchInvoice = "fetch_invoice"
	NodeReconcile    = "reconcile"
)

// Input is the run input that reconciles the invoice id.
func Input(invoiceID string) engine.Update { return engine.Update{"invoice_id": invoiceID} }

// New builds the graph: fetch_invoice (retried) then reconcile.
func New(opts Options) (*engine.Graph[State], error) {
	api := opts.API
	if api == nil {
		api = NewFlakyAPI(2)
	}
	policy := DefaultRetry()
	if opts.Retry != nil {
		policy = *opts.Retry
	}
	g := engine.NewStateGraph[State]()
	g.AddNode(NodeFetchInvoice, func(ctx context.Context, s State) (engine.Output, error) {
		inv, err := api.Invoice(ctx, s.InvoiceID)
		if errors.Is(err, ErrInvoiceNotFound) {
			// The policy retries every error not marked permanent; a
			// missing invoice stays missing, so fail at once.
			return nil, engine.Permanent(fmt.Errorf("fetch invoice: %w", err))
		}
		if err != nil {
			return nil, fmt.Errorf("fetch invoice (attempt %d): %w", engine.Attempt(ctx), err)
		}
		return engine.Update{"invoice": inv, "attempts": engine.Attempt(ctx)}, nil
	}, engine.WithRetry(policy))
	g.AddNode(NodeReconcile, func(_ context.Context, s State) (engine.Output, error) {
		status := "outstanding"
		if s.Invoice.AmountDue == 0 {
			status = "settled"
		}
		return engine.Update{"status": status}, nil
	})
	g.AddEdge(engine.Start, NodeFetchInvoice)
	g.AddEdge(NodeFetchInvoice, NodeReconcile)
	g.AddEdge(NodeReconcile, engine.End)
	return g.Compile(engine.CompileOptions{Name: "flakyservice", Checkpointer: opts.Checkpointer, Cache: opts.Cache, Store: opts.Store})
}
