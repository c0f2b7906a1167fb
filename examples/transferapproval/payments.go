package transferapproval

import (
	"context"
	"fmt"
	"sync"
)

// Payments moves the money: a bank's payment API in production, a Ledger
// here.
type Payments interface {
	// Pay sends amount to recipient and returns the payment's reference.
	Pay(ctx context.Context, recipient string, amount float64) (string, error)
}

// Payment is one executed transfer.
type Payment struct {
	Reference string  `json:"reference"`
	Recipient string  `json:"recipient"`
	Amount    float64 `json:"amount"`
}

// Ledger is an in-memory Payments that records every payment, so tests
// can check that a rejected transfer moved no money and an edited one
// moved the edited amount. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	payments []Payment
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger { return &Ledger{} }

// Pay implements Payments.
func (l *Ledger) Pay(ctx context.Context, recipient string, amount float64) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := Payment{Reference: fmt.Sprintf("TX-%04d", len(l.payments)+1), Recipient: recipient, Amount: amount}
	l.payments = append(l.payments, p)
	return p.Reference, nil
}

// Payments returns the payments made so far, in order.
func (l *Ledger) Payments() []Payment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Payment(nil), l.payments...)
}
