package flakyservice

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// ErrInvoiceNotFound is returned for an invoice id the provider does not
// know. Retrying cannot fix it.
var ErrInvoiceNotFound = errors.New("invoice not found")

// StatusError is a transient provider failure: an HTTP 5xx answer.
type StatusError struct {
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("payment provider answered %d %s", e.Code, http.StatusText(e.Code))
}

// Invoice is what the provider returns.
type Invoice struct {
	ID        string `json:"id"`
	Customer  string `json:"customer"`
	AmountDue int64  `json:"amount_due"` // in cents
}

// InvoiceAPI is the payment provider's invoice endpoint.
type InvoiceAPI interface {
	Invoice(ctx context.Context, id string) (Invoice, error)
}

// FlakyAPI is a scripted InvoiceAPI that behaves like a provider under
// load: the first FailFirst calls for each invoice answer 503, later ones
// succeed. Unknown ids fail with ErrInvoiceNotFound every time.
type FlakyAPI struct {
	FailFirst int
	Invoices  map[string]Invoice

	mu    sync.Mutex
	calls map[string]int
}

// NewFlakyAPI returns a FlakyAPI over a few sample invoices that fails
// the first failFirst calls for each.
func NewFlakyAPI(failFirst int) *FlakyAPI {
	return &FlakyAPI{FailFirst: failFirst, Invoices: map[string]Invoice{
		"in_1001": {ID: "in_1001", Customer: "Acme GmbH", AmountDue: 0},
		"in_1002": {ID: "in_1002", Customer: "Globex Ltd", AmountDue: 129900},
	}}
}

// Invoice implements InvoiceAPI.
func (a *FlakyAPI) Invoice(ctx context.Context, id string) (Invoice, error) {
	if err := ctx.Err(); err != nil {
		return Invoice{}, err
	}
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[string]int{}
	}
	a.calls[id]++
	n := a.calls[id]
	a.mu.Unlock()
	inv, ok := a.Invoices[id]
	if !ok {
		return Invoice{}, fmt.Errorf("%w: %q", ErrInvoiceNotFound, id)
	}
	if n <= a.FailFirst {
		return Invoice{}, &StatusError{Code: http.StatusServiceUnavailable}
	}
	return inv, nil
}

// Calls reports how many times the invoice was requested.
func (a *FlakyAPI) Calls(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[id]
}
