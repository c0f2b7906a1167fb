package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Errors of an AssistantStore; test with errors.Is.
var (
	// ErrUnknownAssistant: no assistant (or no such version of one) has
	// the id.
	ErrUnknownAssistant = errors.New("unknown assistant")
	// ErrAssistantExists: a create with IfExistsRaise found the id taken.
	ErrAssistantExists = errors.New("assistant already exists")
)

// Assistant is a configured use of a registered graph, as the Agent
// Server API serves it: the graph, the configuration and context its runs
// start with, and free-form metadata. Every change is a new version; one
// of them is the assistant's current (latest) one, whose fields these
// are.
type Assistant struct {
	// ID is a UUID in its canonical lower-case form.
	ID string
	// Graph is the registered graph the assistant runs.
	Graph string
	// Name is a label for people; Description is optional (nil: none).
	Name        string
	Description *string
	// Config, Context and Metadata are JSON objects (nil reads back as
	// empty). Numbers read back as json.Number.
	Config, Context, Metadata map[string]any
	// Version is the current version, from 1.
	Version int
	// Created is when the assistant was created; Updated when its current
	// version was made or chosen. A version's Updated is when it was made.
	Created, Updated time.Time
}

// IfExists says what creating an assistant whose id is taken does.
type IfExists string

// The IfExists choices.
const (
	// IfExistsRaise fails with ErrAssistantExists (the default).
	IfExistsRaise IfExists = "raise"
	// IfExistsDoNothing returns the existing assistant unchanged.
	IfExistsDoNothing IfExists = "do_nothing"
)

// AssistantPatch is a change to an assistant: nil fields are kept.
// Metadata is merged into the current metadata key by key; Config and
// Context replace theirs.
type AssistantPatch struct {
	Graph, Name, Description *string
	Config, Context          map[string]any
	Metadata                 map[string]any
}

// AssistantSort names the field a search orders by.
type AssistantSort string

// The orders of a search.
const (
	SortByAssistantID AssistantSort = "assistant_id"
	SortByGraphID     AssistantSort = "graph_id"
	SortByName        AssistantSort = "name"
	SortByCreatedAt   AssistantSort = "created_at"
	SortByUpdatedAt   AssistantSort = "updated_at"
)

// AssistantSorts lists the accepted orders.
var AssistantSorts = []AssistantSort{SortByAssistantID, SortByGraphID, SortByName, SortByCreatedAt, SortByUpdatedAt}

// AssistantQuery selects assistants. Empty fields select everything.
type AssistantQuery struct {
	// Graph and Name must equal the assistant's.
	Graph, Name string
	// Metadata must be contained in the assistant's metadata as Postgres'
	// jsonb @> contains: objects key by key and recursively, arrays as
	// sets of contained elements, other values equal.
	Metadata map[string]any
	// Limit caps the page (0: no cap); Offset skips that many first.
	Limit, Offset int
	// SortBy orders the results ("": created_at), ties by id in the same
	// direction; Desc reverses (the default order is ascending).
	SortBy AssistantSort
	Desc   bool
}

// VersionQuery selects versions of one assistant, newest first.
type VersionQuery struct {
	// Metadata must be contained in the version's metadata (as in
	// AssistantQuery).
	Metadata      map[string]any
	Limit, Offset int
}

// AssistantStore keeps assistants and their versions.
//
// Implementations: MemoryAssistants in this package, runs/pgthreads for
// Postgres; both pass the conformance suite in runs/runstest
// (ExerciseAssistants). Every method checks its input with the Check
// functions below, so both accept and refuse the same things; errors
// for bad input wrap ErrInvalidInput. Times are kept to the microsecond,
// in UTC (Stamp).
type AssistantStore interface {
	// CreateAssistant stores a as version 1 (a.Version is ignored; Created
	// and Updated must be set). When the id is taken it fails with
	// ErrAssistantExists under IfExistsRaise, and returns the existing
	// assistant under IfExistsDoNothing.
	CreateAssistant(ctx context.Context, a Assistant, ifExists IfExists) (Assistant, error)
	// GetAssistant returns an assistant at its current version.
	GetAssistant(ctx context.Context, id string) (Assistant, error)
	// PatchAssistant makes a new version (the highest so far plus one) from
	// the current one and p, made at at, and makes it current.
	PatchAssistant(ctx context.Context, id string, p AssistantPatch, at time.Time) (Assistant, error)
	// DeleteAssistant removes an assistant and all its versions.
	DeleteAssistant(ctx context.Context, id string) error
	// SearchAssistants returns the page q selects and how many assistants
	// match q in all.
	SearchAssistants(ctx context.Context, q AssistantQuery) ([]Assistant, int, error)
	// CountAssistants counts the assistants q selects (its page, order and
	// offset are ignored).
	CountAssistants(ctx context.Context, q AssistantQuery) (int, error)
	// AssistantVersions lists an assistant's versions, newest first; each
	// one's Updated is when it was made. ErrUnknownAssistant when the
	// assistant does not exist.
	AssistantVersions(ctx context.Context, id string, q VersionQuery) ([]Assistant, error)
	// SetLatestVersion makes an existing version current again, at at;
	// ErrUnknownAssistant when the assistant or the version does not
	// exist.
	SetLatestVersion(ctx context.Context, id string, version int, at time.Time) (Assistant, error)
}

// Limits on an assistant; the Check functions enforce them.
const (
	// MaxAssistantNameBytes caps a name and MaxAssistantDescriptionBytes
	// a description.
	MaxAssistantNameBytes        = 1 << 10
	MaxAssistantDescriptionBytes = 64 << 10
	// MaxAssistantJSONBytes caps each of config, context and metadata as
	// JSON.
	MaxAssistantJSONBytes = 1 << 20
	// MaxAssistantPage caps a search's or version list's limit.
	MaxAssistantPage = 1000
)

// CheckAssistantID reports why id cannot be an assistant id, or nil: ids
// are UUIDs in canonical lower-case form (what uuid.String writes), so an
// id has one spelling in every store.
func CheckAssistantID(id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("%w: assistant id %q: use a UUID in lower-case hyphenated form", ErrInvalidInput, clip(id))
	}
	return nil
}

// CheckAssistant reports why a cannot be stored, or nil.
func CheckAssistant(a Assistant) error {
	if err := CheckAssistantID(a.ID); err != nil {
		return err
	}
	if !validName.MatchString(a.Graph) {
		return fmt.Errorf("%w: assistant %s: graph %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, a.ID, clip(a.Graph))
	}
	if a.Created.IsZero() || a.Updated.IsZero() {
		return fmt.Errorf("%w: assistant %s: no creation or update time", ErrInvalidInput, a.ID)
	}
	return checkAssistantFields(a.ID, &a.Name, a.Description, map[string]map[string]any{"config": a.Config, "context": a.Context, "metadata": a.Metadata})
}

// CheckAssistantPatch reports why p cannot change an assistant, or nil.
func CheckAssistantPatch(id string, p AssistantPatch, at time.Time) error {
	if err := CheckAssistantID(id); err != nil {
		return err
	}
	if p.Graph != nil && !validName.MatchString(*p.Graph) {
		return fmt.Errorf("%w: assistant %s: graph %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, id, clip(*p.Graph))
	}
	if at.IsZero() {
		return fmt.Errorf("%w: assistant %s: a change needs a time", ErrInvalidInput, id)
	}
	return checkAssistantFields(id, p.Name, p.Description, map[string]map[string]any{"config": p.Config, "context": p.Context, "metadata": p.Metadata})
}

func checkAssistantFields(id string, name, desc *string, objs map[string]map[string]any) error {
	if name != nil {
		if *name == "" || len(*name) > MaxAssistantNameBytes {
			return fmt.Errorf("%w: assistant %s: name of %d bytes; use 1 to %d", ErrInvalidInput, id, len(*name), MaxAssistantNameBytes)
		}
		if err := checkText(*name); err != nil {
			return fmt.Errorf("%w: assistant %s: name %v", ErrInvalidInput, id, err)
		}
	}
	if desc != nil {
		if len(*desc) > MaxAssistantDescriptionBytes {
			return fmt.Errorf("%w: assistant %s: description of %d bytes; the limit is %d", ErrInvalidInput, id, len(*desc), MaxAssistantDescriptionBytes)
		}
		if err := checkText(*desc); err != nil {
			return fmt.Errorf("%w: assistant %s: description %v", ErrInvalidInput, id, err)
		}
	}
	for _, field := range []string{"config", "context", "metadata"} {
		if _, err := encodeObject(objs[field]); err != nil {
			return fmt.Errorf("%w: assistant %s: %s %v", ErrInvalidInput, id, field, err)
		}
	}
	return nil
}

// CheckAssistantQuery reports why q cannot select assistants, or nil.
func CheckAssistantQuery(q AssistantQuery) error {
	if q.Graph != "" && !validName.MatchString(q.Graph) {
		return fmt.Errorf("%w: graph %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, clip(q.Graph))
	}
	if q.SortBy != "" && !slices.Contains(AssistantSorts, q.SortBy) {
		return fmt.Errorf("%w: sort by %q: use one of assistant_id, graph_id, name, created_at, updated_at", ErrInvalidInput, clip(string(q.SortBy)))
	}
	if err := checkText(q.Name); err != nil {
		return fmt.Errorf("%w: name %v", ErrInvalidInput, err)
	}
	if _, err := encodeObject(q.Metadata); err != nil {
		return fmt.Errorf("%w: metadata %v", ErrInvalidInput, err)
	}
	return checkPage(q.Limit, q.Offset)
}

// CheckVersionQuery reports why q cannot list versions, or nil.
func CheckVersionQuery(q VersionQuery) error {
	if _, err := encodeObject(q.Metadata); err != nil {
		return fmt.Errorf("%w: metadata %v", ErrInvalidInput, err)
	}
	return checkPage(q.Limit, q.Offset)
}

func checkPage(limit, offset int) error {
	if limit < 0 || limit > MaxAssistantPage {
		return fmt.Errorf("%w: limit %d: use 1 to %d (0: no limit)", ErrInvalidInput, limit, MaxAssistantPage)
	}
	if offset < 0 {
		return fmt.Errorf("%w: offset %d: use 0 or more", ErrInvalidInput, offset)
	}
	return nil
}

// EncodeAssistantObject is how stores write config, context and metadata:
// JSON of the object, {} for nil. It fails for what no store can keep:
// values JSON cannot encode, a NUL in a string (Postgres jsonb refuses
// it) and objects larger than MaxAssistantJSONBytes.
func EncodeAssistantObject(m map[string]any) ([]byte, error) { return encodeObject(m) }

func encodeObject(m map[string]any) ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("is not JSON: %v", err)
	}
	if len(b) > MaxAssistantJSONBytes {
		return nil, fmt.Errorf("is %d bytes as JSON; the limit is %d", len(b), MaxAssistantJSONBytes)
	}
	if bytes.Contains(b, []byte(`\u0000`)) {
		return nil, errors.New("holds a NUL character, which Postgres cannot store")
	}
	return b, nil
}

// DecodeAssistantObject reads what EncodeAssistantObject wrote, numbers
// as json.Number.
func DecodeAssistantObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	m := map[string]any{}
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// Normalized is a as every AssistantStore reads it back: its objects
// copied through JSON (never nil, numbers as json.Number), its times
// stamped. a must have passed CheckAssistant.
func (a Assistant) Normalized() Assistant {
	a.Config, a.Context, a.Metadata = copyObject(a.Config), copyObject(a.Context), copyObject(a.Metadata)
	if a.Description != nil {
		d := *a.Description
		a.Description = &d
	}
	a.Created, a.Updated = Stamp(a.Created), Stamp(a.Updated)
	return a
}

func copyObject(m map[string]any) map[string]any {
	b, err := encodeObject(m)
	if err != nil {
		return map[string]any{}
	}
	out, err := DecodeAssistantObject(b)
	if err != nil {
		return map[string]any{}
	}
	return out
}

// Apply is the version p makes of a at at (its Version unchanged):
// what PatchAssistant stores before numbering it.
func (p AssistantPatch) Apply(a Assistant, at time.Time) Assistant {
	a = a.Normalized()
	if p.Graph != nil {
		a.Graph = *p.Graph
	}
	if p.Name != nil {
		a.Name = *p.Name
	}
	if p.Description != nil {
		d := *p.Description
		a.Description = &d
	}
	if p.Config != nil {
		a.Config = copyObject(p.Config)
	}
	if p.Context != nil {
		a.Context = copyObject(p.Context)
	}
	for k, v := range copyObject(p.Metadata) {
		a.Metadata[k] = v
	}
	a.Updated = Stamp(at)
	return a
}
