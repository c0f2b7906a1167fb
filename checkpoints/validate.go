package checkpoints

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/superstep-dev/superstep/internal/jsonfast"
	"github.com/superstep-dev/superstep/internal/pgtext"
)

// The checks in this file are shared by every Saver so that the memory and
// Postgres savers accept and reject exactly the same input: the conformance
// suite holds them to it. They run before anything is written.

// CheckValue reports why raw cannot be stored as a channel value, a write
// value or metadata, or nil when it can: it must be valid JSON in valid
// UTF-8 with no NUL (a raw 0x00 byte or the escape \u0000) and no lone
// UTF-16 surrogate escape (\ud800 without its low half, or a stray low
// half). Postgres jsonb rejects both, and encoding/json would silently turn
// a lone surrogate into U+FFFD, so a saved value would not read back as it
// was. The error wraps ErrInvalidValue.
func CheckValue(raw []byte) error {
	if len(raw) == 0 {
		return fmt.Errorf("%w: empty JSON value", ErrInvalidValue)
	}
	if jsonfast.Simple(raw) {
		return nil // the common small values: valid, nothing to escape
	}
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: value is not valid UTF-8", ErrInvalidValue)
	}
	if !json.Valid(raw) {
		return fmt.Errorf("%w: value is not valid JSON", ErrInvalidValue)
	}
	return checkEscapes(raw)
}

// checkEscapes scans the \u escapes of valid JSON. In valid JSON a
// backslash only occurs inside a string, so no string tracking is needed.
func checkEscapes(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 < len(raw) && raw[i+1] != 'u' {
			i++ // a two-byte escape such as \" or \\
			continue
		}
		r, ok := hex4(raw, i+2)
		if !ok {
			return fmt.Errorf("%w: malformed \\u escape", ErrInvalidValue)
		}
		switch {
		case r == 0:
			return fmt.Errorf("%w: string contains NUL (\\u0000), which Postgres cannot store; remove it", ErrInvalidValue)
		case r >= 0xD800 && r <= 0xDBFF:
			lo := -1
			if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				lo, _ = hex4(raw, i+8)
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return fmt.Errorf("%w: string contains a lone UTF-16 surrogate (\\u%04x)", ErrInvalidValue, r)
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return fmt.Errorf("%w: string contains a lone UTF-16 surrogate (\\u%04x)", ErrInvalidValue, r)
		default:
			i += 5
		}
	}
	return nil
}

func hex4(b []byte, at int) (int, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[at : at+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= int(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}

// ValidText reports whether s can be stored as an identifier (thread id,
// namespace, checkpoint id, channel, task id): valid UTF-8 without NUL.
// An identifier that fails cannot exist in any saver, so lookups treat it
// as missing and writes reject it.
func ValidText(s string) bool { return pgtext.Problem(s) == "" }

// PreparedPut is a Put whose input has been checked and encoded; savers
// build one with PreparePut before they write anything.
type PreparedPut struct {
	// Config is what Put returns: the thread, namespace and checkpoint id.
	Config Config
	// Parent is the parent checkpoint id, "" for none.
	Parent string
	// Checkpoint is a copy of the checkpoint with ChannelValues nil.
	Checkpoint Checkpoint
	// Body is Checkpoint encoded as JSON.
	Body []byte
	// Metadata is the encoded metadata (see Metadata.MarshalJSON).
	Metadata []byte
	// Values holds the values to store: the channels of newVersions that
	// have a value in the checkpoint, by channel.
	Values map[string]json.RawMessage
	// NewVersions is the version under which each value is stored.
	NewVersions map[string]int64
}

// PreparePut checks a Put's arguments and encodes them. Errors wrap
// ErrInvalidConfig (missing or unusable thread or checkpoint id) or
// ErrInvalidValue (a value, metadata or channel name that cannot be
// stored).
func PreparePut(cfg Config, cp *Checkpoint, md Metadata, newVersions map[string]int64) (*PreparedPut, error) {
	mdJSON, err := checkPut(cfg, cp, md, newVersions)
	if err != nil {
		return nil, err
	}
	p := &PreparedPut{
		Config:      Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cp.ID},
		Parent:      cfg.CheckpointID,
		Checkpoint:  *cp,
		Values:      make(map[string]json.RawMessage, len(newVersions)),
		NewVersions: newVersions,
		Metadata:    mdJSON,
	}
	p.Checkpoint.ChannelValues = nil
	p.Checkpoint.TS = cp.TS.UTC()
	for ch := range newVersions {
		if v, ok := cp.ChannelValues[ch]; ok {
			p.Values[ch] = v
		}
	}
	if p.Body, err = json.Marshal(&p.Checkpoint); err != nil {
		return nil, fmt.Errorf("%w: encode checkpoint: %v", ErrInvalidValue, err)
	}
	return p, nil
}

// checkPut checks a Put's arguments, the values it will store included,
// and returns the encoded metadata.
func checkPut(cfg Config, cp *Checkpoint, md Metadata, newVersions map[string]int64) ([]byte, error) {
	if err := checkPutArgs(cfg, cp, newVersions); err != nil {
		return nil, err
	}
	return EncodeMetadata(md)
}

// checkPutArgs is checkPut without the metadata.
func checkPutArgs(cfg Config, cp *Checkpoint, newVersions map[string]int64) error {
	id := ""
	if cp != nil {
		id = cp.ID
	}
	if err := checkPutIDs(cfg, id); err != nil {
		return err
	}
	if err := checkCheckpointNames(cp, newVersions); err != nil {
		return err
	}
	for ch := range newVersions {
		if v, ok := cp.ChannelValues[ch]; ok {
			if err := CheckValue(v); err != nil {
				return fmt.Errorf("channel %q: %w", ch, err)
			}
		}
	}
	return nil
}

// checkPutIDs checks the ids of a put of checkpoint id under cfg.
func checkPutIDs(cfg Config, id string) error {
	if cfg.ThreadID == "" {
		return fmt.Errorf("%w: put needs a thread id", ErrInvalidConfig)
	}
	if id == "" {
		return fmt.Errorf("%w: put needs a checkpoint with an id", ErrInvalidConfig)
	}
	for _, s := range [...]string{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, id} {
		if !ValidText(s) {
			return fmt.Errorf("%w: ids must be valid UTF-8 without NUL: %q", ErrInvalidConfig, s)
		}
	}
	return nil
}

// badName is the error of a channel or node name a checkpoint cannot hold.
func badName(what, s string) error {
	return fmt.Errorf("%w: %s %q is not valid UTF-8 without NUL", ErrInvalidValue, what, s)
}

func checkCheckpointNames(cp *Checkpoint, newVersions map[string]int64) error {
	for ch := range cp.ChannelVersions {
		if !ValidText(ch) {
			return badName("channel", ch)
		}
	}
	for ch := range newVersions {
		if !ValidText(ch) {
			return badName("channel", ch)
		}
	}
	for _, ch := range cp.UpdatedChannels {
		if !ValidText(ch) {
			return badName("channel", ch)
		}
	}
	// Next's nodes are stored as the other names are: a saver's store
	// may not hold a NUL (a Postgres jsonb cannot).
	for _, node := range cp.Next {
		if !ValidText(node) {
			return badName("node", node)
		}
	}
	for node, seen := range cp.VersionsSeen {
		if !ValidText(node) {
			return badName("node", node)
		}
		for ch := range seen {
			if !ValidText(ch) {
				return badName("channel", ch)
			}
		}
	}
	return nil
}

// EncodeMetadata encodes md as stored, after checking every string in it
// (see CheckValue). The error wraps ErrInvalidValue.
func EncodeMetadata(md Metadata) ([]byte, error) {
	if err := checkMetadataText(md); err != nil {
		return nil, err
	}
	if err := checkAny(md.Extra); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	b, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("%w: encode metadata: %v", ErrInvalidValue, err)
	}
	// Without user keys every string was checked above and the encoding is
	// written by hand (Metadata.MarshalJSON): nothing left to scan. User
	// values may be any JSON and are checked as stored.
	if len(md.Extra) > 0 {
		if err := CheckValue(b); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	return b, nil
}

// checkMetadataText checks the strings of md other than its user keys.
func checkMetadataText(md Metadata) error {
	if !ValidText(string(md.Source)) || !ValidText(md.RunID) {
		return fmt.Errorf("%w: metadata source and run_id must be valid UTF-8 without NUL", ErrInvalidValue)
	}
	for k, v := range md.Parents {
		if !ValidText(k) || !ValidText(v) {
			return fmt.Errorf("%w: metadata parents must be valid UTF-8 without NUL", ErrInvalidValue)
		}
	}
	return nil
}

// checkAny checks the strings of the common dynamic JSON shapes before
// encoding/json gets to replace invalid UTF-8 with U+FFFD; anything else is
// checked after encoding by CheckValue.
func checkAny(v any) error {
	switch v := v.(type) {
	case string:
		if !ValidText(v) {
			return fmt.Errorf("%w: string %q is not valid UTF-8 without NUL", ErrInvalidValue, v)
		}
	case map[string]any:
		for k, e := range v {
			if err := checkAny(k); err != nil {
				return err
			}
			if err := checkAny(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkAny(e); err != nil {
				return err
			}
		}
	case map[string]string:
		for k, e := range v {
			if !ValidText(k) || !ValidText(e) {
				return fmt.Errorf("%w: string is not valid UTF-8 without NUL", ErrInvalidValue)
			}
		}
	case []string:
		for _, e := range v {
			if !ValidText(e) {
				return fmt.Errorf("%w: string is not valid UTF-8 without NUL", ErrInvalidValue)
			}
		}
	}
	return nil
}

// ValidateWrites checks PutWrites' arguments. Errors wrap ErrInvalidConfig
// or ErrInvalidValue.
func ValidateWrites(cfg Config, writes []Write, taskID, taskPath string) error {
	if cfg.ThreadID == "" || cfg.CheckpointID == "" {
		return fmt.Errorf("%w: put writes needs a thread id and a checkpoint id", ErrInvalidConfig)
	}
	for _, s := range []string{cfg.ThreadID, cfg.Namespace, cfg.CheckpointID} {
		if !ValidText(s) {
			return fmt.Errorf("%w: ids must be valid UTF-8 without NUL: %q", ErrInvalidConfig, s)
		}
	}
	if !ValidText(taskID) || !ValidText(taskPath) {
		return fmt.Errorf("%w: task id %q and path %q must be valid UTF-8 without NUL", ErrInvalidValue, taskID, taskPath)
	}
	for i, w := range writes {
		if !ValidText(w.Channel) {
			return fmt.Errorf("%w: write %d: channel %q is not valid UTF-8 without NUL", ErrInvalidValue, i, w.Channel)
		}
		if err := CheckValue(w.Value); err != nil {
			return fmt.Errorf("write %d to %q: %w", i, w.Channel, err)
		}
	}
	return nil
}

// EncodeFilter checks a metadata filter and encodes it as a JSON object,
// or returns nil for an empty filter. The error wraps ErrInvalidFilter.
func EncodeFilter(filter map[string]any) ([]byte, error) {
	if len(filter) == 0 {
		return nil, nil
	}
	if err := checkAny(map[string]any(filter)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFilter, err)
	}
	b, err := json.Marshal(filter)
	if err != nil {
		return nil, fmt.Errorf("%w: encode: %v", ErrInvalidFilter, err)
	}
	if err := CheckValue(b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFilter, err)
	}
	return b, nil
}

// CheckCopy checks CopyThread's arguments as every saver must: two
// different, non-empty thread ids. The error wraps ErrInvalidConfig.
func CheckCopy(src, dst string) error {
	if src == "" || dst == "" || src == dst {
		return fmt.Errorf("%w: copy thread needs two different thread ids, got %q and %q", ErrInvalidConfig, src, dst)
	}
	if !ValidText(src) || !ValidText(dst) {
		return fmt.Errorf("%w: thread ids must be valid UTF-8 without NUL", ErrInvalidConfig)
	}
	return nil
}

// CheckDelete checks DeleteThread's argument as every saver must. The
// error wraps ErrInvalidConfig.
func CheckDelete(threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: delete thread needs a thread id", ErrInvalidConfig)
	}
	return nil
}

// CheckPrune checks Prune's arguments as every saver must. The error wraps
// ErrInvalidConfig.
func CheckPrune(threadIDs []string, strategy PruneStrategy) error {
	if strategy != KeepLatest && strategy != DeleteAll {
		return fmt.Errorf("%w: unknown prune strategy %d", ErrInvalidConfig, strategy)
	}
	for _, id := range threadIDs {
		if id == "" {
			return fmt.Errorf("%w: prune got an empty thread id", ErrInvalidConfig)
		}
	}
	return nil
}

// ValidateStep checks the writes of a StepSaver.PutStep (the checkpoint is
// checked by PreparePut). Errors wrap ErrInvalidConfig or ErrInvalidValue.
func ValidateStep(cfg Config, writes []TaskWrites) error {
	for _, tw := range writes {
		if err := ValidateWrites(cfg, tw.Writes, tw.TaskID, tw.TaskPath); err != nil {
			return fmt.Errorf("writes of task %q: %w", tw.TaskID, err)
		}
	}
	return nil
}
