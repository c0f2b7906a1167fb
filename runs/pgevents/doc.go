// Package pgevents is the event log that Studio replicas sharing one
// Postgres use to show every replica's browser tabs the events of a run
// executing on another replica: a durable, ordered log per thread in the
// studio_events table, with NOTIFY saying only that a thread grew.
//
// It knows SQL and pgx only; package runs maps its rows to events and its
// ErrFenced to its own errors.
//
// # Writing
//
// Append writes a batch of events in one implicit transaction (one round
// trip): studio_fence(thread, fence) when the caller is fenced, an
// advisory lock on the thread, the rows numbered after the thread's last
// seq, and pg_notify of "thread seq" on current_schema() || '.studio_events'.
// The lock, held to commit, makes a thread's appends commit in seq order,
// so the rows any reader sees are always a prefix of the log; this is
// what lets a follower keep a single cursor and read `seq > cursor`.
//
// A Writer is one run's: Add queues an event without touching the
// database and a goroutine appends what has queued after 2 ms, or at once
// when 64 events wait. One event therefore reaches another replica about
// 2 ms plus one append (~0.25 ms on a local cluster) after Add. After
// ErrFenced, or any error that may have committed, the writer drops
// everything: an event log with a silent hole would be worse than one
// that stops where the run lost its lease.
//
// # Following
//
// A Tailer holds one connection outside the pool that LISTENs on the
// channel. Each followed thread has a goroutine with its followers'
// cursors: on a notification naming the thread past a cursor, it reads
// the rows after the lowest cursor through the pool (up to 1000 a read)
// and gives each follower those after its own, so one read serves every
// follower of the thread and a slow follower holds up only its own thread.
//
// NOTIFY is not durable: notifications sent while the tailer is
// reconnecting are lost. They carry nothing the table does not, so after
// every LISTEN, and when a follower starts, the thread is read from its
// cursors; nothing appended is missed and, the cursors only moving
// forward, nothing is delivered twice.
//
// The Tailer and the Writer also serve other logs of the same shape
// (TailerOptions.Source, WriterOptions.Append): package runs/pgparts keeps
// API runs' stream parts, numbered per run, that way.
//
// # Retention
//
// Prune deletes old rows but always keeps each thread's newest, from
// which the next append numbers on; a pruned follower resumes at the
// oldest row kept.
package pgevents
