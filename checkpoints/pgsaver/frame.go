package pgsaver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/jsonfast"
	"github.com/superstep-dev/superstep/internal/pgfence"
)

// PutFrame implements checkpoints.FrameSaver: PutStep with the frame's
// checkpoint, without building its maps. The checkpoint body is encoded
// straight from the frame's columns, byte for byte as PutStep encodes
// f.Checkpoint(), and the frame's values are stored and remembered
// without copying (they are given). Its versions and new channels are
// lent and read only within the call: the statements' arguments are
// copies of them (a write sent in a group may be encoded after its
// caller stopped waiting), and the head remembered after a put is built
// once the put succeeded.
func (s *Saver) PutFrame(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) (checkpoints.Config, error) {
	in, rows, err := frameInput(cfg, writes, f, md)
	if err != nil {
		return checkpoints.Config{}, err
	}
	fence, err := pgfence.For(ctx, cfg.ThreadID)
	if err != nil {
		return checkpoints.Config{}, err
	}
	if err := s.retry(ctx, func(ctx context.Context) error { return s.put(ctx, in, rows, fence) }, s.checkpointLanded(in.cfg)); err != nil {
		return checkpoints.Config{}, fmt.Errorf("pgsaver: put step with checkpoint %s: %w", f.ID, err)
	}
	return in.cfg, nil
}

// frameInput checks a PutFrame and encodes what it stores: the put and
// the step's writes (nil when there are none).
func frameInput(cfg checkpoints.Config, writes []checkpoints.TaskWrites, f *checkpoints.Frame, md checkpoints.Metadata) (*putInput, *writeRows, error) {
	mdJSON, err := checkpoints.PrepareFrame(cfg, f, md)
	if err != nil {
		return nil, nil, err
	}
	fp := &framePut{}
	body, err := appendFrameBody(fp.body[:0], f)
	if err != nil {
		return nil, nil, err
	}
	if err := checkpoints.ValidateStep(cfg, writes); err != nil {
		return nil, nil, err
	}
	fp.in = putInput{
		cfg:    checkpoints.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: f.ID},
		parent: cfg.CheckpointID, body: body, metadata: mdJSON,
		channels: f.Channels, versions: f.Versions, fresh: f.New, owned: true,
	}
	w := &fp.writes
	fp.rows = writeRows{task: w.task[:0], path: w.path[:0], idx: w.idx[:0], ch: w.ch[:0], val: w.val[:0]}
	if !fp.rows.addStep(writes) {
		return &fp.in, nil, nil
	}
	return &fp.in, &fp.rows, nil
}

// framePut is a PutFrame's input, its step's writes and its checkpoint's
// body, in one allocation for a step of a few writes.
type framePut struct {
	in     putInput
	rows   writeRows
	writes struct {
		task, path, ch [4]string
		idx            [4]int32
		val            [4][]byte
	}
	body [512]byte
}

// frameBody encodes a checked frame's checkpoint as PreparePut encodes
// f.Checkpoint() (json.Marshal of the Checkpoint without its values): the
// same fields in the same order (next right after ts, and only when Next
// is not nil), map keys sorted, a node or channel named twice keeping its
// last entry, strings escaped as encoding/json escapes them. TestFrameBody
// holds it to that.
func frameBody(f *checkpoints.Frame) ([]byte, error) { return appendFrameBody(nil, f) }

// appendFrameBody appends frameBody(f) to b.
func appendFrameBody(b []byte, f *checkpoints.Frame) ([]byte, error) {
	ts := f.TS.UTC()
	if y := ts.Year(); y < 0 || y > 9999 {
		// Out of encoding/json's range: let it say so, in PutStep's words.
		cp, _, cerr := f.Checkpoint()
		if cerr != nil {
			return nil, cerr
		}
		p, perr := checkpoints.PreparePut(checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{}, nil)
		if perr != nil {
			return nil, perr
		}
		return p.Body, nil
	}
	b = slices.Grow(b, 160+len(f.ID)+24*len(f.Channels)+32*len(f.Seen)+16*len(f.Next))
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, checkpoints.FormatVersion, 10)
	b = append(b, `,"id":`...)
	b = jsonfast.AppendString(b, f.ID)
	b = append(b, `,"ts":"`...)
	b = ts.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if f.Next != nil {
		// omitzero: a nil Next (unknown) is left out, so a body without
		// one is the body written before Next was.
		b = append(b, `,"next":`...)
		b = appendNames(b, f.Next)
	}
	b = append(b, `,"channel_values":null,"channel_versions":`...)
	b = appendVersions(b, f.Channels, f.Versions)
	b = append(b, `,"versions_seen":`...)
	b = appendSeen(b, f.Seen)
	b = append(b, `,"updated_channels":`...)
	if f.UpdatedChannels == nil {
		b = append(b, "null"...)
	} else {
		b = appendNames(b, f.UpdatedChannels)
	}
	return append(b, '}'), nil
}

// appendNames appends the JSON array of names, in their order.
func appendNames(b []byte, names []string) []byte {
	b = append(b, '[')
	for i, s := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonfast.AppendString(b, s)
	}
	return append(b, ']')
}

// appendVersions appends the JSON object of the channels with a version
// (not 0), sorted by name; a name listed twice keeps its last version, as
// a map built in order would.
func appendVersions(b []byte, names []string, versions []int64) []byte {
	var buf [32]int
	order := sortedIndexes(buf[:0], len(names), func(i int) string { return names[i] }, func(i int) bool { return versions[i] != 0 })
	b = append(b, '{')
	for k, i := range order {
		if k > 0 {
			b = append(b, ',')
		}
		b = jsonfast.AppendString(b, names[i])
		b = append(b, ':')
		b = strconv.AppendInt(b, versions[i], 10)
	}
	return append(b, '}')
}

// appendSeen appends versions_seen: an object of the nodes by name, each
// an object of its channels' versions.
func appendSeen(b []byte, seen []checkpoints.SeenVersions) []byte {
	var buf [32]int
	order := sortedIndexes(buf[:0], len(seen), func(i int) string { return seen[i].Node }, nil)
	b = append(b, '{')
	for k, i := range order {
		if k > 0 {
			b = append(b, ',')
		}
		b = jsonfast.AppendString(b, seen[i].Node)
		b = append(b, ':')
		b = appendVersions(b, seen[i].Channels, seen[i].Versions)
	}
	return append(b, '}')
}

// sortedIndexes appends to order the indexes below n that keep holds for
// (all when keep is nil), sorted by name, keeping the last of each name.
// Names already ascending (a frame's channels, a node's triggers) are
// taken as they are.
func sortedIndexes(order []int, n int, name func(int) string, keep func(int) bool) []int {
	ascending := true
	for i := range n {
		if keep != nil && !keep(i) {
			continue
		}
		if len(order) > 0 && name(order[len(order)-1]) >= name(i) {
			ascending = false
		}
		order = append(order, i)
	}
	if ascending {
		return order
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(name(i), name(j)) })
	out := order[:0]
	for k, i := range order {
		if k+1 < len(order) && name(order[k+1]) == name(i) {
			continue // a later entry for the same name wins
		}
		out = append(out, i)
	}
	return out
}
