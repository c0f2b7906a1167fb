package checkpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Frame is a checkpoint in the form a running graph holds it: channels by
// index into a name table that every frame of the graph shares, instead of
// maps keyed by name. Building the maps of a Checkpoint for every superstep
// costs more than the superstep itself; a FrameSaver stores a frame
// without building them, and Checkpoint converts it for any other saver.
//
// A frame is lent to a saver and its names are given: the frame, its
// Versions, New and Seen slices and each Seen entry's Versions are read
// only during PutFrame (the caller reuses them for its next frame), while
// the strings, the name tables (Channels and each Seen entry's Channels),
// Next, UpdatedChannels and New's encoded values are never modified by
// anyone once handed over, so a saver may keep them and the caller may
// share them between frames. (A caller that never writes a frame again,
// as the engine's frame held for exit durability, may also share its
// Seen entries' Versions with its later frames: savers only read them.)
type Frame struct {
	// ID and TS are Checkpoint.ID and Checkpoint.TS.
	ID string
	TS time.Time
	// Channels names the channels by index, in ascending order without
	// repeats (so savers find a channel by binary search).
	Channels []string
	// Versions holds each channel's version by index; 0 means the channel
	// has none (it is absent from Checkpoint.ChannelVersions).
	Versions []int64
	// New lists, by ascending index, the channels whose versions are new in
	// this checkpoint (Put's newVersions), with their encoded values (nil
	// for a channel that has a version but no value).
	New []FrameValue
	// UpdatedChannels is Checkpoint.UpdatedChannels.
	UpdatedChannels []string
	// Next is Checkpoint.Next.
	Next []string
	// Seen is Checkpoint.VersionsSeen, one entry per node.
	Seen []SeenVersions
}

// FrameValue is a channel of a Frame, by index, with its encoded value.
type FrameValue struct {
	Index int
	Value json.RawMessage
}

// SeenVersions are the versions of its trigger channels a node last ran on.
type SeenVersions struct {
	Node string
	// Channels names the channels by index (shared between frames).
	Channels []string
	// Versions holds the version seen of each channel by index; 0 means
	// none (the channel is absent from the node's map).
	Versions []int64
}

// FrameSaver is a Saver that stores frames without building maps. The
// engine finds it by type assertion, as it finds StepSaver.
type FrameSaver interface {
	Saver
	// PutFrame is PutStep(ctx, cfg, writes, f.Checkpoint()) with the
	// frame's new versions, all or nothing, with the same checks. It takes
	// ownership of md, the writes' values and what of f Frame says is
	// given; f itself, its columns and the writes' slices are lent for
	// the call, as PutStep's slices are: a saver copies what it keeps of
	// them, and reads none of them once it has returned, whether it
	// succeeded, failed or its context ended.
	PutFrame(ctx context.Context, cfg Config, writes []TaskWrites, f *Frame, md Metadata) (Config, error)
}

// Checkpoint converts f to the form Saver.Put takes: the checkpoint (its
// ChannelValues hold only the new values) and the new versions. A frame
// whose shape is wrong (see PutFrame's checks) is an error wrapping
// ErrInvalidConfig.
func (f *Frame) Checkpoint() (*Checkpoint, map[string]int64, error) {
	if err := f.checkShape(); err != nil {
		return nil, nil, err
	}
	cp := &Checkpoint{
		V:               FormatVersion,
		ID:              f.ID,
		TS:              f.TS,
		ChannelValues:   make(map[string]json.RawMessage, len(f.New)),
		ChannelVersions: versionMap(f.Channels, f.Versions),
		VersionsSeen:    make(map[string]map[string]int64, len(f.Seen)),
		UpdatedChannels: f.UpdatedChannels,
		Next:            f.Next,
	}
	newVersions := make(map[string]int64, len(f.New))
	for _, nv := range f.New {
		name := f.Channels[nv.Index]
		newVersions[name] = f.Versions[nv.Index]
		if nv.Value != nil {
			cp.ChannelValues[name] = nv.Value
		}
	}
	for _, s := range f.Seen {
		cp.VersionsSeen[s.Node] = versionMap(s.Channels, s.Versions)
	}
	return cp, newVersions, nil
}

// versionMap is the map form of versions by index into names: 0 is
// none.
func versionMap(names []string, versions []int64) map[string]int64 {
	m := make(map[string]int64, len(versions))
	for i, v := range versions {
		if v != 0 {
			m[names[i]] = v
		}
	}
	return m
}

// checkFrame is checkPutArgs for a frame.
func checkFrame(cfg Config, f *Frame) error {
	if f == nil {
		return checkPutIDs(cfg, "")
	}
	if err := checkPutIDs(cfg, f.ID); err != nil {
		return err
	}
	if err := f.checkShape(); err != nil {
		return err
	}
	for i, v := range f.Versions {
		if v != 0 && !ValidText(f.Channels[i]) {
			return badName("channel", f.Channels[i])
		}
	}
	for _, nv := range f.New {
		if nv.Value != nil {
			if err := CheckValue(nv.Value); err != nil {
				return fmt.Errorf("channel %q: %w", f.Channels[nv.Index], err)
			}
		}
	}
	for _, ch := range f.UpdatedChannels {
		if !ValidText(ch) {
			return badName("channel", ch)
		}
	}
	for _, node := range f.Next {
		if !ValidText(node) {
			return badName("node", node)
		}
	}
	for _, s := range f.Seen {
		if !ValidText(s.Node) {
			return badName("node", s.Node)
		}
		for i, v := range s.Versions {
			if v != 0 && !ValidText(s.Channels[i]) {
				return badName("channel", s.Channels[i])
			}
		}
	}
	return nil
}

// checkShape checks what indexing a frame needs: every slice as long as
// the one it is indexed with, channels ascending without repeats, new
// channels ascending and with versions. Errors wrap ErrInvalidConfig.
func (f *Frame) checkShape() error {
	if len(f.Versions) != len(f.Channels) {
		return fmt.Errorf("%w: frame has %d versions for %d channels", ErrInvalidConfig, len(f.Versions), len(f.Channels))
	}
	for i := 1; i < len(f.Channels); i++ {
		if f.Channels[i-1] >= f.Channels[i] {
			return fmt.Errorf("%w: frame's channels must be in ascending order without repeats (%q, then %q)", ErrInvalidConfig, f.Channels[i-1], f.Channels[i])
		}
	}
	last := -1
	for _, nv := range f.New {
		if nv.Index <= last || nv.Index >= len(f.Versions) || f.Versions[nv.Index] == 0 {
			return fmt.Errorf("%w: frame's new channels must be ascending indexes of channels with versions", ErrInvalidConfig)
		}
		last = nv.Index
	}
	for _, s := range f.Seen {
		if len(s.Versions) != len(s.Channels) {
			return fmt.Errorf("%w: node %q has %d versions seen for %d channels", ErrInvalidConfig, s.Node, len(s.Versions), len(s.Channels))
		}
	}
	return nil
}

// PrepareFrame checks PutFrame's arguments as every FrameSaver must (the
// checks PutStep makes on f.Checkpoint(), in the same order: ids, frame
// shape, names, values, then metadata) and returns the encoded metadata
// (see EncodeMetadata). Errors wrap ErrInvalidConfig or ErrInvalidValue.
// The writes are checked by ValidateStep.
func PrepareFrame(cfg Config, f *Frame, md Metadata) ([]byte, error) {
	if err := checkFrame(cfg, f); err != nil {
		return nil, err
	}
	if len(md.Extra) == 0 {
		// EncodeMetadata's bytes without its second pass: with no user
		// keys, MarshalJSON writes compact, HTML-safe JSON by hand, which
		// json.Marshal would only scan and copy.
		if err := checkMetadataText(md); err != nil {
			return nil, err
		}
		return md.MarshalJSON()
	}
	return EncodeMetadata(md)
}
