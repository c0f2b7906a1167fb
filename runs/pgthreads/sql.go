package pgthreads

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/runs"
)

// The statements of the registry, on the studio_threads table of
// migrations/005_threads.sql (and 007, 009). Every time is a parameter
// from the caller; none uses now().

const threadColumns = `id, graph, status, run_id, error, updated_at,
    stopped_before, stopped_after, interrupt_before, interrupt_after, recursion_limit, owner,
    metadata, created_at, state_updated_at`

// sqlSave never changes created_at: a thread keeps its first save's.
const sqlSave = `
INSERT INTO studio_threads (` + threadColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14, $15)
ON CONFLICT (id) DO UPDATE
SET graph = excluded.graph, status = excluded.status, run_id = excluded.run_id,
    error = excluded.error, updated_at = excluded.updated_at,
    stopped_before = excluded.stopped_before, stopped_after = excluded.stopped_after,
    interrupt_before = excluded.interrupt_before, interrupt_after = excluded.interrupt_after,
    recursion_limit = excluded.recursion_limit, owner = excluded.owner,
    metadata = excluded.metadata, state_updated_at = excluded.state_updated_at`

const sqlGet = `SELECT ` + threadColumns + ` FROM studio_threads WHERE id = $1`

const sqlDelete = `DELETE FROM studio_threads WHERE id = $1`

const sqlExists = `SELECT EXISTS (SELECT 1 FROM studio_threads WHERE id = $1)`

// threadOrder is each runs.ThreadSorts value's ORDER BY column. Status is
// compared bytewise, as the memory registry does, whatever the database's
// collation. A NULL state_updated_at (never written) is the oldest.
var threadOrder = map[string]string{
	"":                 "updated_at",
	"updated_at":       "updated_at",
	"created_at":       "created_at",
	"state_updated_at": "state_updated_at",
	"status":           `status COLLATE "C"`,
	"thread_id":        "id",
}

// listQuery assembles the list (or, with count, the count) statement for
// a checked filter from the constant fragments above and its values as
// parameters: one statement per filter shape, so each can use the index
// its filter and order have (a catch-all "$n IS NULL OR ..." would make
// the planner give up the GIN index on metadata).
func listQuery(f runs.ThreadFilter, count bool) (string, []any, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Status != "" {
		where = append(where, "status = "+arg(string(f.Status)))
	}
	if f.Graph != "" {
		where = append(where, "graph = "+arg(f.Graph))
	}
	if len(f.IDs) > 0 {
		where = append(where, "id = ANY("+arg(f.IDs)+"::text[])")
	}
	// Decoded and encoded again so the filter's JSON is the records'.
	if meta := (runs.ThreadRecord{Metadata: f.Metadata}).Normalized().Metadata; len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return "", nil, err
		}
		where = append(where, "metadata @> "+arg(string(b))+"::jsonb")
	}
	var q strings.Builder
	if count {
		q.WriteString("SELECT count(*) FROM studio_threads")
	} else {
		q.WriteString("SELECT " + threadColumns + " FROM studio_threads")
	}
	if len(where) > 0 {
		q.WriteString("\nWHERE " + strings.Join(where, " AND "))
	}
	if count {
		return q.String(), args, nil
	}
	dir, nulls := "DESC", "NULLS LAST"
	if f.SortOrder == "asc" {
		dir, nulls = "ASC", "NULLS FIRST"
	}
	col, ok := threadOrder[f.SortBy]
	if !ok {
		return "", nil, fmt.Errorf("no order for sort %q", f.SortBy)
	}
	fmt.Fprintf(&q, "\nORDER BY %s %s", col, dir)
	if f.SortBy == "state_updated_at" {
		q.WriteString(" " + nulls)
	}
	if f.SortBy != "thread_id" {
		q.WriteString(", id")
	}
	var limit *int64 // NULL: no limit
	if f.Limit > 0 {
		l := int64(f.Limit)
		limit = &l
	}
	q.WriteString("\nLIMIT " + arg(limit) + " OFFSET " + arg(int64(f.Offset)))
	return q.String(), args, nil
}

// sqlHeartbeat records an owner's beat (never moving it back) and drops
// owners silent for a day, so the table holds the live ones and a few.
const sqlHeartbeat = `
WITH gone AS (DELETE FROM studio_owners WHERE seen_at < $2::timestamptz - interval '1 day')
INSERT INTO studio_owners (owner, seen_at) VALUES ($1, $2)
ON CONFLICT (owner) DO UPDATE SET seen_at = greatest(studio_owners.seen_at, excluded.seen_at)`

// sqlSettle replaces a record only while it is still the orphan read.
const sqlSettle = `
UPDATE studio_threads
SET graph = $2, status = $3, run_id = $4, error = $5, updated_at = $6,
    stopped_before = $7, stopped_after = $8, interrupt_before = $9, interrupt_after = $10,
    recursion_limit = $11, owner = $12, metadata = $15::jsonb, state_updated_at = $16
WHERE id = $1 AND status = 'running' AND owner = $13 AND run_id = $14`

// sqlOrphans lists running threads whose owner has not beaten since $1.
const sqlOrphans = `SELECT ` + threadColumns + ` FROM studio_threads t
WHERE status = 'running' AND NOT EXISTS (
    SELECT 1 FROM studio_owners o WHERE o.owner = t.owner AND t.owner <> '' AND o.seen_at > $1)
ORDER BY updated_at, id`

// The run log's statements, on the studio_runs table of
// migrations/006_runs.sql.
const (
	runColumns = `thread_id, run_id, kind, from_checkpoint, origin, started_at, ended_at, status, error, tasks, answers, api, takeovers`

	sqlSaveRun = `
INSERT INTO studio_runs (` + runColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (thread_id, run_id) DO UPDATE
SET kind = excluded.kind, from_checkpoint = excluded.from_checkpoint, origin = excluded.origin,
    started_at = excluded.started_at, ended_at = excluded.ended_at, status = excluded.status,
    error = excluded.error, tasks = excluded.tasks, answers = excluded.answers, api = excluded.api,
    takeovers = excluded.takeovers
WHERE studio_runs.ended_at IS NULL OR excluded.ended_at IS NOT NULL`

	sqlRunLanded = `SELECT EXISTS (SELECT 1 FROM studio_runs
WHERE thread_id = $1 AND run_id = $2 AND status = $3 AND ended_at IS NOT DISTINCT FROM $4::timestamptz)`

	// Newest first, ties by run id descending: the reverse of the list's
	// order. LIMIT NULL means no limit.
	sqlListRuns = `SELECT ` + runColumns + ` FROM studio_runs
WHERE thread_id = $1
ORDER BY started_at DESC, run_id DESC
LIMIT $2`

	sqlDeleteRun = `DELETE FROM studio_runs WHERE thread_id = $1 AND run_id = $2`
)

// The assistants' statements, on the tables of
// migrations/008_assistants.sql. Times come from the caller.
const (
	assistantColumns = `id, graph, name, description, config, context, metadata, version, created_at, updated_at`

	// sqlCreateAssistant stores version 1 and the assistant together; no
	// row back means the id is taken.
	sqlCreateAssistant = `
WITH a AS (
    INSERT INTO studio_assistants (id, graph, name, description, config, context, metadata, version, last_version, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 1, $8, $9)
    ON CONFLICT (id) DO NOTHING
    RETURNING ` + assistantColumns + `
), v AS (
    INSERT INTO studio_assistant_versions (assistant_id, version, graph, name, description, config, context, metadata, created_at)
    SELECT id, 1, graph, name, description, config, context, metadata, updated_at FROM a
)
SELECT ` + assistantColumns + ` FROM a`

	sqlGetAssistant = `SELECT ` + assistantColumns + ` FROM studio_assistants WHERE id = $1`

	sqlAssistantExists = `SELECT EXISTS (SELECT 1 FROM studio_assistants WHERE id = $1)`

	// sqlPatchAssistant makes the next version from the current row, which
	// the UPDATE locks: a concurrent change waits and numbers after it.
	// NULL parameters keep a field; $4 says whether $5 sets the
	// description (which may be set to NULL). Metadata merges key by key.
	sqlPatchAssistant = `
WITH up AS (
    UPDATE studio_assistants
    SET graph = coalesce($2, graph), name = coalesce($3, name),
        description = CASE WHEN $4::boolean THEN $5 ELSE description END,
        config = coalesce($6::jsonb, config), context = coalesce($7::jsonb, context),
        metadata = metadata || $8::jsonb,
        version = last_version + 1, last_version = last_version + 1, updated_at = $9
    WHERE id = $1
    RETURNING ` + assistantColumns + `
), v AS (
    INSERT INTO studio_assistant_versions (assistant_id, version, graph, name, description, config, context, metadata, created_at)
    SELECT id, version, graph, name, description, config, context, metadata, updated_at FROM up
)
SELECT ` + assistantColumns + ` FROM up`

	sqlDeleteAssistant = `DELETE FROM studio_assistants WHERE id = $1`

	sqlSetLatestVersion = `
UPDATE studio_assistants a
SET graph = v.graph, name = v.name, description = v.description, config = v.config,
    context = v.context, metadata = v.metadata, version = v.version, updated_at = $3
FROM studio_assistant_versions v
WHERE a.id = $1 AND v.assistant_id = $1 AND v.version = $2
RETURNING a.id, a.graph, a.name, a.description, a.config, a.context, a.metadata, a.version, a.created_at, a.updated_at`

	// Each version reads as an assistant made when the version was.
	sqlAssistantVersions = `
SELECT v.assistant_id, v.graph, v.name, v.description, v.config, v.context, v.metadata, v.version, a.created_at, v.created_at
FROM studio_assistant_versions v JOIN studio_assistants a ON a.id = v.assistant_id
WHERE v.assistant_id = $1 AND v.metadata @> $2::jsonb
ORDER BY v.version DESC
LIMIT $3 OFFSET $4`

	// assistantFilter: "" selects every graph and name.
	assistantFilter = `WHERE ($1 = '' OR graph = $1) AND ($2 = '' OR name = $2) AND metadata @> $3::jsonb`

	sqlCountAssistants = `SELECT count(*) FROM studio_assistants ` + assistantFilter
)
