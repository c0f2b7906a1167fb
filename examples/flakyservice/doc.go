// Package flakyservice is a billing back-office step that reconciles
// invoices against a payment provider whose API sheds load: under pressure
// it answers 503 for a moment, then recovers. Failing the reconciliation
// run on the first 503 would page someone for nothing; retrying a request
// for an invoice that does not exist would only add load.
//
// # The graph
//
//	START ─ fetch_invoice (retried with backoff) ─ reconcile ─ END
//
// # What it demonstrates
//
//   - A node retry policy (engine.WithRetry) with exponential backoff and
//     jitter (DefaultRetry), replaceable through Options.Retry; the tests
//     use 1ms waits without jitter so the schedule is exact and fast.
//   - Every failed attempt is visible: a TaskRetried event carries the
//     attempt number, the error and the wait before the next try, and the
//     node itself reads its attempt with engine.Attempt (the state records
//     the attempt that succeeded).
//   - engine.Permanent: a missing invoice is marked permanent, so the
//     default classifier does not retry it and the run fails on the first
//     attempt with an error that still matches ErrInvoiceNotFound.
//
// FlakyAPI is the scripted provider: it fails the first N calls for each
// invoice with a 503 StatusError.
package flakyservice
