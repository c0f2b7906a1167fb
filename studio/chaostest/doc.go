// Package chaostest is the chaos harness of durable runs (issue #19): its
// tests start Studio replicas as real processes on one Postgres schema,
// kill, pause and restart them (and the database) under load through the
// Agent Server API, and check from the database that every run finished
// once, on one chain of checkpoints, with no write from a replica that had
// lost its lease. It holds tests only.
package chaostest
