package engine

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/store"
)

// PregelConfig describes a low-level graph: channels, nodes, and how input
// and output map onto channels.
type PregelConfig struct {
	Name     string
	Channels map[string]channels.Channel
	// ChannelTypes gives the Go type of values written to a channel, used
	// to decode writes read back from a checkpointer. Channels without an
	// entry decode into generic JSON values.
	ChannelTypes map[string]reflect.Type
	Nodes        []*Node
	// InputChannels receive the input: with one channel the input is
	// written to it raw; with several the input must be a map keyed by
	// channel.
	InputChannels []string
	// OutputChannels are read for the output: one channel gives its raw
	// value, several give a map of the available ones.
	OutputChannels []string
	// StreamChannels are the channels Stream shows ("values" and
	// "updates") and snapshots hold; by default every channel, as
	// upstream. Upstream streams raw values when stream_channels is one
	// name rather than a list; Go has only the list, so one channel here
	// streams its raw value, as one output channel makes Invoke return
	// its raw value.
	StreamChannels []string
	Checkpointer   checkpoints.Saver
	Cache          cache.Cache
	// Store is the long-term memory nodes reach with StoreFrom.
	Store store.Store
	// Retry is the default for nodes without policies of their own.
	Retry           []RetryPolicy
	InterruptBefore []string
	InterruptAfter  []string
}

// Pregel is a compiled graph. It is immutable and safe for concurrent runs
// (on different threads).
type Pregel struct {
	cfg            PregelConfig
	channels       map[string]channels.Channel
	chanNames      []string
	nodes          map[string]*Node
	nodeNames      []string
	triggerToNodes map[string][]string

	// Index form used by the loop: channels and nodes by position in
	// chanNames / nodeNames, so a superstep does no map lookups.
	chanIdx   map[string]int
	specs     []channels.Channel
	nodeList  []*Node
	trigNodes [][]int // channel → nodes it triggers, in name order
	tasksIdx  int
	streamIdx []int
	outIdx    []int
	// mapInput converts the run input into writes (StateGraph sets it).
	mapInput func(input any) ([]KV, error)
	// mapUpdate validates a Command's update (StateGraph sets it).
	mapUpdate func(Output) ([]KV, error)
	// mapOutput builds the output from the channels (StateGraph sets it).
	mapOutput func(r reader) (any, error)
	// mem keeps the buffers of finished runs for the next ones. It points
	// to a pool of its own rather than embedding one: the runtime holds
	// every pool in use until a collection empties it, and a pointer into
	// the graph would hold the graph, and every checkpoint its saver
	// stored, through the first collection after the program drops them.
	// Nothing in the pool points back to the graph (see loop.release).
	mem *sync.Pool
	// volatile are the channels an unwritten step may change (see
	// channels.Unwritten), by index.
	volatile []int
	// volKind says, by channel index, whether an unwritten step may change
	// the channel: volClears when it holds a value (EphemeralValue and the
	// like), volUnknown for kinds that do not say (always asked).
	volKind []uint8
	// statePlan builds the StateGraph's state struct (nil otherwise).
	statePlan *inputPlan
}

// NewPregel validates cfg and compiles it.
func NewPregel(cfg PregelConfig) (*Pregel, error) {
	g := &Pregel{cfg: cfg, channels: map[string]channels.Channel{}, nodes: map[string]*Node{}, triggerToNodes: map[string][]string{}, mem: new(sync.Pool)}
	for name, ch := range cfg.Channels {
		if ch == nil {
			return nil, fmt.Errorf("%w: channel %q is nil", ErrInvalidGraph, name)
		}
		g.channels[name] = ch
	}
	if _, ok := g.channels[tasksChannel]; !ok {
		g.channels[tasksChannel] = channels.NewTopic(reflect.TypeFor[Send](), false)
	}
	for name := range g.channels {
		g.chanNames = append(g.chanNames, name)
	}
	sort.Strings(g.chanNames)
	if len(cfg.InputChannels) == 0 {
		return nil, fmt.Errorf("%w: no input channels", ErrInvalidGraph)
	}
	for _, c := range slices.Concat(cfg.InputChannels, cfg.OutputChannels, cfg.StreamChannels) {
		if _, ok := g.channels[c]; !ok {
			return nil, fmt.Errorf("%w: input/output channel %q is not declared", ErrInvalidGraph, c)
		}
	}
	for _, n := range cfg.Nodes {
		if n == nil || n.Name == "" {
			return nil, fmt.Errorf("%w: a node has no name", ErrInvalidGraph)
		}
		if _, dup := g.nodes[n.Name]; dup {
			return nil, fmt.Errorf("%w: node %q is declared twice", ErrInvalidGraph, n.Name)
		}
		if n.Func == nil {
			return nil, fmt.Errorf("%w: node %q has no function (NodeBuilder.Do)", ErrInvalidGraph, n.Name)
		}
		for _, c := range slices.Concat(n.Triggers, n.Channels) {
			if _, ok := g.channels[c]; !ok {
				return nil, fmt.Errorf("%w: node %q uses channel %q, which is not declared", ErrInvalidGraph, n.Name, c)
			}
		}
		n = cloneNode(n) // the compiled graph owns its copy
		g.nodes[n.Name] = n
		g.nodeNames = append(g.nodeNames, n.Name)
		for _, c := range n.Triggers {
			g.triggerToNodes[c] = append(g.triggerToNodes[c], n.Name)
		}
	}
	sort.Strings(g.nodeNames)
	for _, names := range g.triggerToNodes {
		sort.Strings(names)
	}
	g.chanIdx = make(map[string]int, len(g.chanNames))
	for i, c := range g.chanNames {
		g.chanIdx[c] = i
		g.specs = append(g.specs, g.channels[c])
	}
	g.tasksIdx = g.chanIdx[tasksChannel]
	g.volKind = make([]uint8, len(g.specs))
	for i, ch := range g.specs {
		u, ok := ch.(channels.Unwritten)
		switch {
		case !ok:
			g.volKind[i] = volUnknown
		case u.ChangesWhenUnwritten():
			g.volKind[i] = volClears
		default:
			continue
		}
		g.volatile = append(g.volatile, i)
	}
	g.trigNodes = make([][]int, len(g.chanNames))
	for i, name := range g.nodeNames {
		n := g.nodes[name]
		n.idx = i
		n.sortedTriggers()
		n.trig = n.trig[:0]
		for _, c := range n.Triggers {
			n.trig = append(n.trig, g.chanIdx[c])
			g.trigNodes[g.chanIdx[c]] = append(g.trigNodes[g.chanIdx[c]], i)
		}
		n.writers = make([]Writer, len(n.Writers))
		for k, w := range n.Writers {
			n.writers[k] = w
			if e, ok := w.(WriteEntry); ok {
				if c, known := g.chanIdx[e.Channel]; known {
					n.writers[k] = indexedEntry{WriteEntry: e, idx: c}
				}
			}
		}
		n.read = n.read[:0]
		for _, c := range n.Channels {
			n.read = append(n.read, g.chanIdx[c])
		}
		n.alone = []string{n.Name}
		g.nodeList = append(g.nodeList, n)
	}
	for _, c := range g.streamChannels() {
		g.streamIdx = append(g.streamIdx, g.chanIdx[c])
	}
	for _, c := range cfg.OutputChannels {
		g.outIdx = append(g.outIdx, g.chanIdx[c])
	}
	for _, list := range [][]string{cfg.InterruptBefore, cfg.InterruptAfter} {
		for _, name := range list {
			if _, ok := g.nodes[name]; !ok && name != "*" {
				return nil, fmt.Errorf("%w: breakpoint on unknown node %q", ErrInvalidGraph, name)
			}
		}
	}
	return g, nil
}

// Name is the graph's name.
func (g *Pregel) Name() string { return g.cfg.Name }

// Checkpointer is the graph's saver (nil when none).
func (g *Pregel) Checkpointer() checkpoints.Saver { return g.cfg.Checkpointer }

// Breakpoints returns the nodes the graph was compiled to stop before and
// after ("*" = every visible node). Per-run RunOptions may replace them.
func (g *Pregel) Breakpoints() (before, after []string) {
	return slices.Clone(g.cfg.InterruptBefore), slices.Clone(g.cfg.InterruptAfter)
}

// NodeNames lists the nodes, sorted.
func (g *Pregel) NodeNames() []string { return slices.Clone(g.nodeNames) }

// StateKeys lists the channels a snapshot's Values holds and a state
// edit may write (a StateGraph's state keys), sorted; a key among them
// may have no value yet.
func (g *Pregel) StateKeys() []string { return slices.Sorted(slices.Values(g.streamChannels())) }

func (g *Pregel) streamChannels() []string {
	if len(g.cfg.StreamChannels) > 0 {
		return g.cfg.StreamChannels
	}
	out := make([]string, 0, len(g.cfg.Channels))
	for _, c := range g.chanNames {
		if _, declared := g.cfg.Channels[c]; declared && c != tasksChannel {
			out = append(out, c)
		}
	}
	return out
}

func cloneNode(n *Node) *Node {
	c := *n
	c.Triggers = slices.Clone(n.Triggers)
	c.Channels = slices.Clone(n.Channels)
	c.Writers = slices.Clone(n.Writers)
	c.trig, c.read, c.writers = nil, nil, nil
	return &c
}
