// Package migrations holds Superstep's Postgres schema as numbered .sql
// files, embedded into the binary and applied with tern
// (github.com/jackc/tern/v2), which is pgx-native and runs every migration in
// a transaction. From version 11 (RiverSince) the schema also holds river's
// tables (github.com/riverqueue/river, the durable runs' job queue), applied
// with river's own migrator at RiverVersion. A whole migration, both parts,
// runs under one advisory lock, so that several Studio replicas starting
// together apply each migration exactly once.
//
// Each file holds its up migration, the marker line
//
//	---- create above / drop below ----
//
// and its down migration. Files are never edited once released; a change is
// a new file with the next number.
package migrations
