package checkpoints

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/superstep-dev/superstep/internal/slab"
)

// Memory is a Saver that keeps every checkpoint of every thread in memory,
// for tests and for running without a database. It copies values in and
// out, so callers can never change what it stores. Channel values are
// stored once per (thread, namespace, channel, version), as upstream, and
// shared by the checkpoints that carry that version. PutStep takes
// ownership of what it is given instead of copying it; PutFrame keeps
// what a frame gives and a compact copy of what it lends (memFrame). It ignores
// fences (WithFence): one process has no other replica to fence out.
type Memory struct {
	mu      sync.RWMutex
	threads map[string]*memThread
}

var (
	_ StepSaver  = (*Memory)(nil)
	_ FrameSaver = (*Memory)(nil)
)

type memThread struct {
	lastSeq    int64
	namespaces map[string]*memNS
}

type memNS struct {
	// thread and name say whose namespace it is.
	thread, name string
	// order holds the checkpoints by ascending seq: the newest is last.
	order []*memCP
	// byID indexes order by checkpoint id once ids stop arriving in
	// ascending order; until then (the engine's ids always ascend) get
	// searches order, and a checkpoint costs no map entry.
	byID map[string]*memCP
	// writes holds the pending writes saved against checkpoint ids that
	// have no checkpoint (yet: a write may be saved before its checkpoint,
	// or without one if a put is lost). A checkpoint keeps its own
	// (memCP.writes) and takes these when it is stored.
	writes map[string][]memWrite
	memSlabs
	// shapes are the shapes last made for checkpoints put as frames (the
	// next is made at shapeAt): a run's steps take turns among a few
	// (an agent's model and tools steps, say). lastMeta is the metadata
	// of the last checkpoint put: the next one's, but for its step, most
	// of the time.
	shapes   [4]*frameShape
	shapeAt  int
	lastMeta *Metadata
}

// memSlabs are the slabs (see internal/slab) a namespace's checkpoints,
// their numbers, their values by channel and their writes are carved
// from: a run adds one of each every superstep, and they go together when
// the thread is deleted. keep, which drops some and keeps others, moves
// the survivors to fresh slabs.
type memSlabs struct {
	cps    slab.Slab[memCP]
	strs   slab.Slab[string]
	nums   slab.Slab[int64]
	mwrite slab.Slab[memWrite]
}

// get returns the checkpoint with the id, or nil.
func (ns *memNS) get(id string) *memCP {
	if ns.byID != nil {
		return ns.byID[id]
	}
	n := len(ns.order)
	if n == 0 {
		return nil
	}
	// Most lookups are of the newest checkpoint (a step's parent) or of
	// an id newer than all (the step's own).
	switch last := ns.order[n-1]; {
	case last.id == id:
		return last
	case last.id < id:
		return nil
	}
	i, ok := slices.BinarySearchFunc(ns.order, id, func(c *memCP, id string) int { return strings.Compare(c.id, id) })
	if !ok {
		return nil
	}
	return ns.order[i]
}

// indexLast records the checkpoint just appended to order by its id,
// building byID the first time ids do not ascend.
func (ns *memNS) indexLast() {
	n := len(ns.order)
	c := ns.order[n-1]
	switch {
	case ns.byID != nil:
		ns.byID[c.id] = c
	case n > 1 && ns.order[n-2].id >= c.id:
		ns.byID = make(map[string]*memCP, n)
		for _, c := range ns.order {
			ns.byID[c.id] = c
		}
	}
}

// memCP is a stored checkpoint. Its maps, slices and byte slices are never
// modified once stored, so checkpoints share them. A checkpoint put as a
// Frame keeps a compact copy of the frame (frame) instead of maps (put);
// version, value and fill read either form. A run saves one per
// superstep, so it holds no more than it must.
type memCP struct {
	home   *memNS // the thread's namespace holding the checkpoint
	seq    int64
	parent string
	id     string
	frame  memFrame   // frame.shape is nil unless put as a Frame
	put    *memMapsCP // the checkpoint put as maps (Put, PutStep)
	// meta is the metadata but for its step (see metadata): shared by
	// the checkpoints of a namespace whose metadata differ only in step,
	// as a run's do.
	meta *Metadata
	step int
	// doc is the metadata as filters read it (a *lazyDoc): made when it
	// is put if the metadata has user keys (their JSON as stored), else
	// when a filter first needs it (most checkpoints are never
	// filtered). Copies of a memCP share it once made.
	doc unsafe.Pointer
	// writes are the pending writes saved against the checkpoint, sorted
	// by task and index.
	writes []memWrite
}

// memMapsCP is a checkpoint put as maps.
type memMapsCP struct {
	// cp holds V, ID, TS, UpdatedChannels, ChannelVersions and
	// VersionsSeen; ChannelValues is nil.
	cp     Checkpoint
	values memValues
}

// metadata is the checkpoint's metadata; its maps are shared and never
// modified.
func (c *memCP) metadata() Metadata {
	md := *c.meta
	md.Step = c.step
	return md
}

// isFrame says whether the checkpoint was put as a Frame.
func (c *memCP) isFrame() bool { return c.frame.shape != nil }

// head is the checkpoint's identity and time, and its format version.
func (c *memCP) head() Checkpoint {
	if c.isFrame() {
		return Checkpoint{V: FormatVersion, ID: c.id, TS: c.frame.ts()}
	}
	return Checkpoint{V: c.put.cp.V, ID: c.id, TS: c.put.cp.TS}
}

// updated is the checkpoint's UpdatedChannels.
func (c *memCP) updated() []string {
	if c.isFrame() {
		return c.frame.shape.updated
	}
	return c.put.cp.UpdatedChannels
}

// next is the checkpoint's Next.
func (c *memCP) next() []string {
	if c.isFrame() {
		return c.frame.shape.next
	}
	return c.put.cp.Next
}

// maps is the checkpoint's maps (none when put as a Frame).
func (c *memCP) maps() *Checkpoint {
	if c == nil || c.isFrame() {
		return &Checkpoint{}
	}
	return &c.put.cp
}

// lazyDoc is a checkpoint's metadata for filters: its JSON, decoded
// when a filter first needs it.
type lazyDoc struct {
	raw []byte
	doc atomic.Pointer[decodedDoc]
}

type decodedDoc struct{ v any }

// docOf is the lazyDoc of metadata with user keys (mdJSON as stored),
// nil for metadata without (see memCP.doc).
func docOf(mdJSON []byte) unsafe.Pointer {
	if mdJSON == nil {
		return nil
	}
	return unsafe.Pointer(&lazyDoc{raw: mdJSON})
}

func (c *memCP) document() any {
	// Readers filtering at once (under the read lock) may each encode
	// or decode; the first to store wins and all return its document.
	d := (*lazyDoc)(atomic.LoadPointer(&c.doc))
	if d == nil {
		// Metadata without user keys is encoded only when a filter
		// first needs it; its strings were checked when it was put.
		raw, _ := json.Marshal(c.metadata())
		d = &lazyDoc{raw: raw}
		if !atomic.CompareAndSwapPointer(&c.doc, nil, unsafe.Pointer(d)) {
			d = (*lazyDoc)(atomic.LoadPointer(&c.doc))
		}
	}
	if v := d.doc.Load(); v != nil {
		return v.v
	}
	v := &decodedDoc{}
	v.v, _ = decodeJSON(d.raw)
	if !d.doc.CompareAndSwap(nil, v) {
		v = d.doc.Load()
	}
	return v.v
}

// memFrame is a checkpoint stored from a Frame, in memory of the saver's
// own: PutFrame is lent the frame's columns, so their numbers are copied
// into one piece of int64s (nothing in it for the collector to follow),
// and the names, which a frame hands over for good, are kept in a shape
// shared by every checkpoint of the namespace that has the same ones
// (the frames of a run's steps mostly do). A run saves one a superstep,
// and its memory is most of what a long-running process keeps.
type memFrame struct {
	shape *frameShape // nil unless the checkpoint was put as a Frame
	// nums holds the checkpoint's time (seconds, then nanoseconds), the
	// channels' versions by index, then the versions seen of each of
	// shape.seen's entries in turn; 0 is no version.
	nums   []int64
	values []string // by channel index, frozen; "": none
}

// frameShape is what the checkpoints put as frames share of them: the
// name tables and the names of the step. Never modified once made.
type frameShape struct {
	channels      []string
	seen          []seenShape
	next, updated []string
}

// seenShape is a node's entry in a frame's versions seen: its name and the
// names of its channels, whose versions follow in memFrame.nums.
type seenShape struct {
	node     string
	channels []string
}

// numsHead is how many of memFrame.nums come before the versions: the
// time's seconds and nanoseconds.
const numsHead = 2

// fits reports whether the shape holds f's names.
func (sh *frameShape) fits(f *Frame) bool {
	if !sameNames(sh.channels, f.Channels) || !sameList(sh.next, f.Next) || !sameList(sh.updated, f.UpdatedChannels) || len(sh.seen) != len(f.Seen) {
		return false
	}
	for i, s := range f.Seen {
		if sh.seen[i].node != s.Node || !sameNames(sh.seen[i].channels, s.Channels) {
			return false
		}
	}
	return true
}

// shapeOf is the shape of f's names: one of ns's recent ones when it
// fits, else a new one, which keeps f's name tables and lists (a frame
// hands those over for good).
func (ns *memNS) shapeOf(f *Frame) *frameShape {
	for _, sh := range ns.shapes {
		if sh != nil && sh.fits(f) {
			return sh
		}
	}
	sh := &frameShape{channels: f.Channels, next: f.Next, updated: f.UpdatedChannels, seen: make([]seenShape, len(f.Seen))}
	for i, s := range f.Seen {
		sh.seen[i] = seenShape{node: s.Node, channels: s.Channels}
	}
	ns.shapes[ns.shapeAt] = sh
	ns.shapeAt = (ns.shapeAt + 1) % len(ns.shapes)
	return sh
}

// sameList is sameNames telling a nil list (unknown) from an empty one.
func sameList(a, b []string) bool { return (a == nil) == (b == nil) && sameNames(a, b) }

// ts is the checkpoint's time.
func (f *memFrame) ts() time.Time { return time.Unix(f.nums[0], f.nums[1]).UTC() }

// versions is the channels' versions, by index.
func (f *memFrame) versions() []int64 {
	return f.nums[numsHead : numsHead+len(f.shape.channels)]
}

// index is channel's index in the frame, or -1.
func (f *memFrame) index(channel string) int {
	if i, ok := slices.BinarySearch(f.shape.channels, channel); ok {
		return i
	}
	return -1
}

// version is the checkpoint's version of channel.
func (c *memCP) version(channel string) (int64, bool) {
	if c.isFrame() {
		f := &c.frame
		if i := f.index(channel); i >= 0 {
			if v := f.versions()[i]; v != 0 {
				return v, true
			}
		}
		return 0, false
	}
	v, ok := c.put.cp.ChannelVersions[channel]
	return v, ok
}

// value is the checkpoint's value of channel.
func (c *memCP) value(channel string) ([]byte, bool) {
	if c.isFrame() {
		f := &c.frame
		if i := f.index(channel); i >= 0 && f.values[i] != "" {
			return thawed(f.values[i]), true
		}
		return nil, false
	}
	return c.put.values.get(channel)
}

// memValues are a checkpoint's channel values sorted by channel: a
// checkpoint holds a handful, and a sorted slice is one allocation where a
// map is several, on every step.
type memValues []memValue

type memValue struct {
	channel string
	value   []byte
}

func (vs memValues) get(channel string) ([]byte, bool) {
	i, ok := slices.BinarySearchFunc(vs, channel, func(v memValue, ch string) int { return cmp.Compare(v.channel, ch) })
	if !ok {
		return nil, false
	}
	return vs[i].value, true
}

type memWrite struct {
	task    string
	idx     int
	channel string
	value   string // frozen
}

// frozen returns b as a string without copying it: b is the saver's and
// never modified again. Stored values are kept as strings, a third
// smaller than byte slices, in the structures a run adds to every step.
func frozen(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// thawed returns the bytes of a frozen value without copying them, for
// reading only; nil for "".
func thawed(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// cloneBytes copies a frozen value out; nil for "".
func cloneBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// NewMemory returns an empty in-memory saver.
func NewMemory() *Memory {
	return &Memory{threads: map[string]*memThread{}}
}

// Put implements Saver.
func (m *Memory) Put(ctx context.Context, cfg Config, cp *Checkpoint, md Metadata, newVersions map[string]int64) (Config, error) {
	if err := ctx.Err(); err != nil {
		return Config{}, err
	}
	in, err := m.prepare(cfg, cp, md, newVersions)
	if err != nil {
		return Config{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.store(in, cp, newVersions, false), nil
}

// PutStep implements StepSaver: the writes and the checkpoint are saved
// under one lock, so no reader sees one without the other.
func (m *Memory) PutStep(ctx context.Context, cfg Config, writes []TaskWrites, cp *Checkpoint, md Metadata, newVersions map[string]int64) (Config, error) {
	if err := ctx.Err(); err != nil {
		return Config{}, err
	}
	in, err := m.prepare(cfg, cp, md, newVersions)
	if err != nil {
		return Config{}, err
	}
	return m.saveStep(cfg, writes, func(*memNS) Config { return m.store(in, cp, newVersions, true) })
}

// saveStep checks a step's writes, then saves them and (with save) its
// checkpoint under one lock, so that no reader sees one without the other.
func (m *Memory) saveStep(cfg Config, writes []TaskWrites, save func(*memNS) Config) (Config, error) {
	if err := ValidateStep(cfg, writes); err != nil {
		return Config{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.ensure(cfg.ThreadID, cfg.Namespace)
	for _, tw := range writes {
		ns.addWrites(cfg.CheckpointID, tw.Writes, tw.TaskID, true)
	}
	return save(ns), nil
}

// memPut is a checked Put, ready to store.
type memPut struct {
	cfg    Config
	parent string
	md     Metadata
	mdJSON []byte
}

// prepare checks a Put and builds what does not need the lock.
func (m *Memory) prepare(cfg Config, cp *Checkpoint, md Metadata, newVersions map[string]int64) (memPut, error) {
	if err := checkPutArgs(cfg, cp, newVersions); err != nil {
		return memPut{}, err
	}
	return prepareMetadata(cfg, cp.ID, md)
}

// prepareMetadata checks and encodes a put's metadata.
func prepareMetadata(cfg Config, id string, md Metadata) (memPut, error) {
	var mdJSON []byte
	if len(md.Extra) == 0 {
		if err := checkMetadataText(md); err != nil {
			return memPut{}, err
		}
	} else {
		var err error
		if mdJSON, err = EncodeMetadata(md); err != nil {
			return memPut{}, err
		}
	}
	in := memPut{cfg: Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: id}, parent: cfg.CheckpointID, mdJSON: mdJSON}
	if len(md.Extra) == 0 {
		in.md = md
		in.md.Extra = nil
		in.md.Parents = noParents
		if len(md.Parents) > 0 {
			in.md.Parents = maps.Clone(md.Parents)
		}
	} else {
		// Decoding user keys back gives them the types they read back
		// with from any saver (numbers as float64).
		var dec Metadata // not &in.md: that would put every put's in on the heap
		if err := json.Unmarshal(mdJSON, &dec); err != nil {
			return memPut{}, fmt.Errorf("checkpoints: decode metadata: %w", err)
		}
		in.md = dec
	}
	return in, nil
}

// noParents is the stored Parents of every checkpoint without any. Stored
// maps are never written, so checkpoints share it.
var noParents = map[string]string{}

// shareMeta is the stored form of a checkpoint's checked metadata (see
// memCP.meta): the namespace's last one when md differs from it only in
// step, else a new one. Metadata with user keys is never shared: its
// lazyDoc is the checkpoint's own.
func (ns *memNS) shareMeta(md Metadata) *Metadata {
	if p := ns.lastMeta; p != nil && md.Extra == nil && p.Extra == nil && p.Source == md.Source && p.RunID == md.RunID && maps.Equal(p.Parents, md.Parents) {
		return p
	}
	p := new(Metadata)
	*p = md
	p.Step = 0
	ns.lastMeta = p
	return p
}

// adoption is what adopt remembers from one checkpoint to the next: the
// last metadata it copied, and the copy.
type adoption struct{ from, to *Metadata }

// ownMeta is adopt's copy of stored metadata m, with strings of its own
// (a subgraph's Parents hold its parent run's ids), made once for the
// checkpoints in a row that share m.
func (ns *memNS) ownMeta(m *Metadata, a *adoption) *Metadata {
	if a.from == m {
		return a.to
	}
	own := *m
	own.RunID = strings.Clone(m.RunID)
	if len(m.Parents) > 0 {
		own.Parents = make(map[string]string, len(m.Parents))
		for name, id := range m.Parents {
			own.Parents[strings.Clone(name)] = strings.Clone(id)
		}
	}
	*a = adoption{m, &own}
	ns.lastMeta = &own
	return &own
}

func (m *Memory) ensure(thread, name string) *memNS {
	th := m.threads[thread]
	if th == nil {
		th = &memThread{namespaces: map[string]*memNS{}}
		m.threads[thread] = th
	}
	ns := th.namespaces[name]
	if ns == nil {
		ns = &memNS{thread: thread, name: name, writes: map[string][]memWrite{}}
		th.namespaces[name] = ns
	}
	return ns
}

// store saves a prepared put; m.mu must be held. Stored maps and slices
// are never modified, so a checkpoint shares those equal to its parent's
// (the versions seen by nodes that did not run, unchanged values) rather
// than copying them again.
//
// owned (PutStep): the caller handed over cp's maps, slices and byte
// slices, so they are kept as they are instead of copied.
func (m *Memory) store(in memPut, cp *Checkpoint, newVersions map[string]int64, owned bool) Config {
	ns := m.ensure(in.cfg.ThreadID, in.cfg.Namespace)
	th := m.threads[in.cfg.ThreadID]
	parent := ns.get(in.parent)
	ref := parent
	if ref == nil && len(ns.order) > 0 {
		ref = ns.order[len(ns.order)-1]
	}
	stored := ns.cps.New()
	*stored = memCP{home: ns, parent: in.parent, id: cp.ID, put: &memMapsCP{}, meta: ns.shareMeta(in.md), step: in.md.Step, doc: docOf(in.mdJSON)}
	scp := &stored.put.cp
	*scp = Checkpoint{V: cp.V, ID: cp.ID, TS: cp.TS.UTC()}
	if owned {
		scp.ChannelVersions = cp.ChannelVersions
		scp.VersionsSeen = cp.VersionsSeen
		scp.UpdatedChannels = cp.UpdatedChannels
	} else if ref != nil {
		rcp := ref.maps()
		scp.ChannelVersions = shareMap(rcp.ChannelVersions, cp.ChannelVersions)
		scp.VersionsSeen = shareSeen(rcp.VersionsSeen, cp.VersionsSeen)
		if ru := ref.updated(); slices.Equal(ru, cp.UpdatedChannels) && (ru == nil) == (cp.UpdatedChannels == nil) {
			scp.UpdatedChannels = ru
		} else {
			scp.UpdatedChannels = slices.Clone(cp.UpdatedChannels)
		}
	} else {
		scp.ChannelVersions = shareMap(nil, cp.ChannelVersions)
		scp.VersionsSeen = shareSeen(nil, cp.VersionsSeen)
		scp.UpdatedChannels = slices.Clone(cp.UpdatedChannels)
	}
	scp.Next = cp.Next
	if !owned {
		scp.Next = slices.Clone(cp.Next) // nil stays nil: unknown
	}
	values := make(memValues, 0, len(scp.ChannelVersions))
	sameAsParent := parent != nil
	for ch, ver := range scp.ChannelVersions {
		if _, isNew := newVersions[ch]; isNew {
			sameAsParent = false
			if v, ok := cp.ChannelValues[ch]; ok {
				if !owned {
					v = slices.Clone(v)
				}
				values = append(values, memValue{ch, v})
			}
			continue
		}
		v, ok, fromParent := ns.inherited(parent, ch, ver)
		sameAsParent = sameAsParent && fromParent
		if ok {
			values = append(values, memValue{ch, v})
		}
	}
	if sameAsParent && !parent.isFrame() && len(values) == len(parent.put.values) {
		values = parent.put.values
	} else {
		slices.SortFunc(values, func(a, b memValue) int { return cmp.Compare(a.channel, b.channel) })
	}
	stored.put.values = values
	th.add(ns, stored)
	return in.cfg
}

// add places a new checkpoint in ns, or replaces the one with its id
// (keeping that one's position).
func (th *memThread) add(ns *memNS, c *memCP) {
	if old := ns.get(c.id); old != nil {
		c.seq, c.writes = old.seq, old.writes
		// Neither old's values piece nor c's slot may keep what is
		// replaced: both stay in chunks that live on.
		if old.isFrame() {
			clear(old.frame.values)
		}
		*old = *c
		*c = memCP{}
		return
	}
	if ws, ok := ns.writes[c.id]; ok {
		c.writes = ws
		delete(ns.writes, c.id)
	}
	th.lastSeq++
	c.seq = th.lastSeq
	ns.order = append(ns.order, c)
	ns.indexLast()
}

// PutFrame implements FrameSaver: the frame's numbers are copied into a
// piece of the namespace's own, its names shared with the checkpoint put
// before it when they are the same (see memFrame), and each channel's
// value is found by index in the parent's when both share the name table.
func (m *Memory) PutFrame(ctx context.Context, cfg Config, writes []TaskWrites, f *Frame, md Metadata) (Config, error) {
	if err := ctx.Err(); err != nil {
		return Config{}, err
	}
	if err := checkFrame(cfg, f); err != nil {
		return Config{}, err
	}
	in, err := prepareMetadata(cfg, f.ID, md)
	if err != nil {
		return Config{}, err
	}
	return m.saveStep(cfg, writes, func(ns *memNS) Config { return m.storeFrame(ns, in, f) })
}

// storeFrame saves a checked frame in ns; m.mu must be held.
func (m *Memory) storeFrame(ns *memNS, in memPut, f *Frame) Config {
	stored := ns.cps.New()
	*stored = memCP{home: ns, parent: in.parent, id: f.ID, meta: ns.shareMeta(in.md), step: in.md.Step, doc: docOf(in.mdJSON)}
	n := numsHead + len(f.Versions)
	for _, s := range f.Seen {
		n += len(s.Versions)
	}
	nums := ns.nums.Make(n)
	nums[0], nums[1] = f.TS.Unix(), int64(f.TS.Nanosecond())
	at := numsHead + copy(nums[numsHead:], f.Versions)
	for _, s := range f.Seen {
		at += copy(nums[at:], s.Versions)
	}
	stored.frame = memFrame{shape: ns.shapeOf(f), nums: nums, values: ns.strs.Make(len(f.Channels))}
	fr := &stored.frame
	parent := ns.get(in.parent)
	var same *memFrame // the parent's frame, when it has the same channels by index
	if parent != nil && parent.isFrame() && sameNames(parent.frame.shape.channels, f.Channels) {
		same = &parent.frame
	}
	next := 0
	for i, ver := range f.Versions {
		if next < len(f.New) && f.New[next].Index == i {
			fr.values[i] = frozen(f.New[next].Value)
			next++
			continue
		}
		switch {
		case ver == 0: // no version, no value
		case same != nil && same.versions()[i] == ver:
			fr.values[i] = same.values[i]
		default:
			v, _, _ := ns.inherited(parent, f.Channels[i], ver)
			fr.values[i] = frozen(v)
		}
	}
	m.threads[in.cfg.ThreadID].add(ns, stored)
	return in.cfg
}

// sameNames reports whether two name tables are equal, cheaply when they
// are the same table.
func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// shareMap returns prev when it holds exactly next, else a copy of next.
func shareMap[V comparable](prev, next map[string]V) map[string]V {
	if next == nil {
		return nil
	}
	if prev != nil && maps.Equal(prev, next) {
		return prev
	}
	return maps.Clone(next)
}

// shareSeen is shareMap for versions seen: each node's map is shared when
// unchanged (most nodes do not run in a given step), and the whole map
// when every node's is.
func shareSeen(prev, next map[string]map[string]int64) map[string]map[string]int64 {
	if next == nil {
		return nil
	}
	out := make(map[string]map[string]int64, len(next))
	same := prev != nil && len(prev) == len(next)
	for node, seen := range next {
		p, ok := prev[node]
		if ok && (p == nil) == (seen == nil) && maps.Equal(p, seen) {
			out[node] = p
			continue
		}
		same = false
		out[node] = maps.Clone(seen)
	}
	if same {
		return prev
	}
	return out
}

// inherited is the value a checkpoint carries for a channel it did not
// write, at version ver: the parent's value, or its lack of one, when the
// parent has that version (a value saved at this version elsewhere
// belongs to another branch); else the value first saved at that version
// in the namespace. fromParent says which.
func (ns *memNS) inherited(parent *memCP, channel string, ver int64) (v []byte, ok, fromParent bool) {
	if parent != nil {
		if pv, has := parent.version(channel); has && pv == ver {
			v, ok = parent.value(channel)
			return v, ok, true
		}
	}
	v, ok = ns.valueAt(channel, ver)
	return v, ok, false
}

// valueAt finds the value first saved for channel at version in the
// namespace, for a checkpoint that carries the channel unchanged from
// other than its parent (a "__copy__" fork). It is the rare path, so a
// scan in saving order is enough.
func (ns *memNS) valueAt(channel string, version int64) ([]byte, bool) {
	for _, c := range ns.order {
		if cv, ok := c.version(channel); ok && cv == version {
			if v, ok := c.value(channel); ok {
				return v, true
			}
		}
	}
	return nil, false
}

// PutWrites implements Saver.
func (m *Memory) PutWrites(ctx context.Context, cfg Config, writes []Write, taskID, taskPath string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateWrites(cfg, writes, taskID, taskPath); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ensure(cfg.ThreadID, cfg.Namespace).addWrites(cfg.CheckpointID, writes, taskID, false)
	return nil
}

// addWrites saves a task's checked writes against checkpoint id; owned:
// the caller handed the values over (PutStep), so they are not copied.
func (ns *memNS) addWrites(id string, writes []Write, taskID string, owned bool) {
	c := ns.get(id)
	var list []memWrite
	if c != nil {
		list = c.writes
	} else {
		list = ns.writes[id]
	}
	if list == nil {
		list = ns.mwrite.Make(len(writes))[:0]
	}
	for i, w := range writes {
		value := frozen(w.Value)
		if !owned {
			value = string(w.Value)
		}
		mw := memWrite{task: taskID, idx: WriteIndex(w.Channel, i), channel: w.Channel, value: value}
		at, found := slices.BinarySearchFunc(list, mw, cmpWrite)
		switch {
		case !found:
			list = slices.Insert(list, at, mw)
		case IsSpecial(w.Channel):
			list[at] = mw
		}
	}
	if c != nil {
		c.writes = list
	} else {
		ns.writes[id] = list
	}
}

func cmpWrite(a, b memWrite) int {
	return cmp.Or(cmp.Compare(a.task, b.task), cmp.Compare(a.idx, b.idx))
}

// Get implements Saver.
func (m *Memory) Get(ctx context.Context, cfg Config) (*Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.ThreadID == "" {
		return nil, nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	ns := m.namespace(cfg.ThreadID, cfg.Namespace)
	if ns == nil {
		return nil, nil
	}
	var c *memCP
	if cfg.CheckpointID != "" {
		c = ns.get(cfg.CheckpointID)
	} else if len(ns.order) > 0 {
		c = ns.order[len(ns.order)-1]
	}
	if c == nil {
		return nil, nil
	}
	return c.tuple(), nil
}

func (m *Memory) namespace(thread, ns string) *memNS {
	if th := m.threads[thread]; th != nil {
		return th.namespaces[ns]
	}
	return nil
}

// List implements Saver.
func (m *Memory) List(ctx context.Context, q ListQuery, opts ListOptions) ([]*Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrInvalidFilter, opts.Limit)
	}
	fb, err := EncodeFilter(opts.Filter)
	if err != nil {
		return nil, err
	}
	var filter any
	if fb != nil {
		if filter, err = decodeJSON(fb); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidFilter, err)
		}
	}
	match := func(c *memCP) bool { return filter == nil || ContainsJSON(c.document(), filter) }

	m.mu.RLock()
	defer m.mu.RUnlock()
	var found []*memCP
	if q.ThreadID != "" {
		th := m.threads[q.ThreadID]
		if th == nil {
			return nil, nil
		}
		// Within a thread, Before is a position in the thread's sequence
		// when it names one of its checkpoints.
		beforeSeq := int64(-1)
		if opts.Before != "" {
			for _, ns := range th.namespaces {
				if c := ns.get(opts.Before); c != nil {
					beforeSeq = c.seq
					break
				}
			}
		}
		older := func(c *memCP) bool {
			switch {
			case opts.Before == "":
				return true
			case beforeSeq >= 0:
				return c.seq < beforeSeq
			default:
				return c.id < opts.Before
			}
		}
		if !q.AllNamespaces {
			ns := th.namespaces[q.Namespace]
			if ns == nil {
				return nil, nil
			}
			// The fast path of a history page: walk back from the newest.
			if opts.Limit > 0 {
				found = make([]*memCP, 0, min(opts.Limit, len(ns.order)))
			}
			for i := len(ns.order) - 1; i >= 0; i-- {
				c := ns.order[i]
				if older(c) && match(c) {
					found = append(found, c)
					if len(found) == opts.Limit {
						break
					}
				}
			}
		} else {
			for _, ns := range th.namespaces {
				for _, c := range ns.order {
					if older(c) && match(c) {
						found = append(found, c)
					}
				}
			}
			slices.SortFunc(found, func(a, b *memCP) int {
				return cmp.Or(cmp.Compare(b.seq, a.seq), cmp.Compare(b.id, a.id))
			})
		}
	} else {
		for _, th := range m.threads {
			for name, ns := range th.namespaces {
				if !q.AllNamespaces && name != q.Namespace {
					continue
				}
				for _, c := range ns.order {
					if (opts.Before == "" || c.id < opts.Before) && match(c) {
						found = append(found, c)
					}
				}
			}
		}
		slices.SortFunc(found, func(a, b *memCP) int {
			return cmp.Or(cmp.Compare(b.id, a.id), cmp.Compare(a.home.thread, b.home.thread), cmp.Compare(a.home.name, b.home.name))
		})
	}
	if opts.Limit > 0 && len(found) > opts.Limit {
		found = found[:opts.Limit]
	}
	// One allocation per kind of struct for the whole page: a history
	// page is allocation-bound.
	out := make([]*Tuple, len(found))
	tuples := make([]Tuple, len(found))
	cps := make([]Checkpoint, len(found))
	parents := make([]Config, len(found))
	nNames := 0
	for _, c := range found {
		nNames += len(c.updated()) + len(c.next())
	}
	names := make([]string, 0, nNames) // never nil: an empty list stays empty
	// take copies from into names; capped, so that appending to one
	// tuple's slice cannot write into the next one's.
	take := func(from []string) []string {
		if from == nil {
			return nil
		}
		at := len(names)
		names = append(names, from...)
		return names[at:len(names):len(names)]
	}
	for i, c := range found {
		c.fill(&tuples[i], &cps[i], &parents[i], opts.MetadataOnly, opts.Headers)
		cps[i].UpdatedChannels = take(c.updated())
		cps[i].Next = take(c.next())
		out[i] = &tuples[i]
	}
	return out, nil
}

// tuple copies a stored checkpoint out, with its values.
func (c *memCP) tuple() *Tuple {
	t := &Tuple{}
	cp := &Checkpoint{}
	c.fill(t, cp, &Config{}, false, false)
	cp.UpdatedChannels = slices.Clone(c.updated())
	cp.Next = slices.Clone(c.next())
	return t
}

// fill copies a stored checkpoint into t, using cp and parent as the
// storage of its checkpoint and parent config. It leaves
// cp.UpdatedChannels and cp.Next to the caller, which can allocate them for many
// tuples at once.
// With headers, only the checkpoint's identity and time are copied (see
// ListOptions.Headers).
func (c *memCP) fill(t *Tuple, cp *Checkpoint, parent *Config, metadataOnly, headers bool) {
	switch {
	case headers:
		*cp = c.head()
		metadataOnly = true
	case c.isFrame():
		*cp = c.head()
		c.frame.fillMaps(cp)
	default:
		*cp = copyCheckpoint(&c.put.cp)
	}
	md := c.metadata()
	if headers && len(md.Parents) == 0 && len(md.Extra) == 0 {
		md.Parents = nil // nothing to copy: encodes as {} all the same
	} else {
		md = copyMetadata(md)
	}
	*t = Tuple{
		Config:     Config{ThreadID: c.home.thread, Namespace: c.home.name, CheckpointID: c.id},
		Checkpoint: cp,
		Metadata:   md,
	}
	if c.parent != "" {
		*parent = Config{ThreadID: c.home.thread, Namespace: c.home.name, CheckpointID: c.parent}
		t.ParentConfig = parent
	}
	if metadataOnly {
		return
	}
	if c.isFrame() {
		f := &c.frame
		cp.ChannelValues = make(map[string]json.RawMessage, len(f.values))
		for i, v := range f.values {
			if v != "" {
				cp.ChannelValues[f.shape.channels[i]] = cloneBytes(v)
			}
		}
	} else {
		cp.ChannelValues = make(map[string]json.RawMessage, len(c.put.values))
		for _, v := range c.put.values {
			cp.ChannelValues[v.channel] = slices.Clone(v.value)
		}
	}
	for _, w := range c.writes {
		t.PendingWrites = append(t.PendingWrites, PendingWrite{TaskID: w.task, Channel: w.channel, Value: cloneBytes(w.value)})
	}
}

// DeleteThread implements Saver.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckDelete(threadID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, threadID)
	return nil
}

// CopyThread implements Saver.
func (m *Memory) CopyThread(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckCopy(src, dst); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if th := m.threads[dst]; th != nil {
		for _, ns := range th.namespaces {
			if len(ns.order) > 0 {
				return fmt.Errorf("%w: cannot copy thread %q into %q, which has checkpoints", ErrThreadExists, src, dst)
			}
		}
	}
	from := m.threads[src]
	if from == nil {
		return nil
	}
	to := &memThread{lastSeq: from.lastSeq, namespaces: make(map[string]*memNS, len(from.namespaces))}
	for name, ns := range from.namespaces {
		c := &memNS{
			thread: dst,
			name:   name,
			order:  make([]*memCP, len(ns.order)),
			writes: make(map[string][]memWrite, len(ns.writes)),
		}
		if ns.byID != nil {
			c.byID = make(map[string]*memCP, len(ns.byID))
		}
		var a adoption
		for i, cp := range ns.order {
			cc := c.adopt(cp, &a)
			c.order[i] = cc
			if c.byID != nil {
				c.byID[cc.id] = cc
			}
		}
		for id, ws := range ns.writes {
			c.writes[strings.Clone(id)] = ownWrites(make([]memWrite, len(ws)), ws)
		}
		to.namespaces[name] = c
	}
	m.threads[dst] = to
	return nil
}

// Prune implements Saver.
func (m *Memory) Prune(ctx context.Context, threadIDs []string, strategy PruneStrategy) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := CheckPrune(threadIDs, strategy); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range threadIDs {
		th := m.threads[id]
		if th == nil {
			continue
		}
		if strategy == DeleteAll {
			delete(m.threads, id)
			continue
		}
		for _, ns := range th.namespaces {
			if len(ns.order) > 1 {
				ns.keep(func(c *memCP) bool { return c == ns.order[len(ns.order)-1] })
			}
		}
	}
	return nil
}

// DeleteForRuns implements Saver.
func (m *Memory) DeleteForRuns(ctx context.Context, runIDs []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(runIDs) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, th := range m.threads {
		for _, ns := range th.namespaces {
			if slices.ContainsFunc(ns.order, func(c *memCP) bool { return c.meta.RunID != "" && slices.Contains(runIDs, c.meta.RunID) }) {
				ns.keep(func(c *memCP) bool { return c.meta.RunID == "" || !slices.Contains(runIDs, c.meta.RunID) })
			}
		}
	}
	return nil
}

// adopt returns a copy of c carved from ns's slabs that shares no chunk
// (see internal/slab) with c's namespace or with the run that saved c: its
// frame's numbers and values, its writes and its ids are copied. Prune
// and DeleteForRuns move what they keep with it, so that it does not keep
// what they dropped alive; CopyThread copies with it, so that the copy
// keeps nothing of the source once the source is deleted.
func (ns *memNS) adopt(c *memCP, a *adoption) *memCP {
	moved := ns.cps.New()
	*moved = *c
	moved.home = ns
	moved.id, moved.parent = strings.Clone(c.id), strings.Clone(c.parent)
	moved.meta = ns.ownMeta(c.meta, a)
	if moved.isFrame() {
		moved.frame.nums = ns.nums.Make(len(c.frame.nums))
		copy(moved.frame.nums, c.frame.nums)
		moved.frame.values = ns.strs.Make(len(c.frame.values))
		copy(moved.frame.values, c.frame.values)
	}
	moved.writes = ownWrites(ns.mwrite.Make(len(c.writes)), c.writes)
	return moved
}

// ownWrites copies src into dst, as long, with task ids of their own: a
// run's are carved from its chunk of id text.
func ownWrites(dst, src []memWrite) []memWrite {
	for i, w := range src {
		w.task = strings.Clone(w.task)
		dst[i] = w
	}
	return dst
}

// keep drops the checkpoints for which keep is false and every write not
// saved against a kept checkpoint. The survivors move to fresh slabs
// (adopt), so that nothing kept holds on to a chunk shared with what was
// dropped.
func (ns *memNS) keep(keep func(*memCP) bool) {
	kept := ns.order[:0:0]
	ns.memSlabs = memSlabs{}
	ns.lastMeta = nil // it may be a dropped checkpoint's
	var a adoption
	for _, c := range ns.order {
		if !keep(c) {
			if ns.byID != nil {
				delete(ns.byID, c.id)
			}
			continue
		}
		moved := ns.adopt(c, &a)
		if ns.byID != nil {
			ns.byID[moved.id] = moved // the key too: the map keeps the string assigned
		}
		kept = append(kept, moved)
	}
	ns.order = kept
	// The writes of dropped checkpoints went with them; those saved
	// against no checkpoint go too.
	clear(ns.writes)
}

// fillMaps builds the version maps of a checkpoint stored as a frame.
func (f *memFrame) fillMaps(cp *Checkpoint) {
	sh := f.shape
	cp.ChannelVersions = versionMap(sh.channels, f.versions())
	cp.VersionsSeen = make(map[string]map[string]int64, len(sh.seen))
	at := numsHead + len(sh.channels)
	for _, s := range sh.seen {
		cp.VersionsSeen[s.node] = versionMap(s.channels, f.nums[at:at+len(s.channels)])
		at += len(s.channels)
	}
}

// copyCheckpoint copies a stored checkpoint out, without its values and
// its updated channels (see fill).
func copyCheckpoint(cp *Checkpoint) Checkpoint {
	out := *cp
	out.ChannelValues = nil
	if cp.ChannelVersions != nil {
		out.ChannelVersions = maps.Clone(cp.ChannelVersions)
	}
	if cp.VersionsSeen != nil {
		out.VersionsSeen = make(map[string]map[string]int64, len(cp.VersionsSeen))
		for k, v := range cp.VersionsSeen {
			out.VersionsSeen[k] = maps.Clone(v)
		}
	}
	out.UpdatedChannels, out.Next = nil, nil
	return out
}

func copyMetadata(md Metadata) Metadata {
	out := md
	out.Parents = maps.Clone(md.Parents)
	if md.Extra != nil {
		out.Extra = copyJSON(md.Extra).(map[string]any)
	}
	return out
}

// copyJSON deep-copies a value decoded by encoding/json.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyJSON(e)
		}
		return out
	default:
		return v
	}
}
