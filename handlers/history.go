package handlers

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/textcut"
	"github.com/superstep-dev/superstep/web"
)

const (
	// maxPendingLoads caps how many checkpoints of a tree page have
	// their pending writes read to find interrupts and answers (a read
	// loads the checkpoint's values too; see pendingOf).
	maxPendingLoads = 20
	// answerPreviewBytes cuts a resume answer in a row's label.
	answerPreviewBytes = 40
)

// nullTaskID is the task id of writes a Command leaves for the thread,
// among them a resume answer (engine's nullTaskID, as upstream spells it).
const nullTaskID = "00000000-0000-0000-0000-000000000000"

// Happened says in words what made each checkpoint of a tree page, from
// its metadata, its parent on the page and, where pending is given, the
// writes saved against it. The mapping, in the order a row shows it:
//
//   - source "input": "input" (a run's input, or an edit as __input__).
//   - source "loop" whose parent holds an interrupt and was written by
//     another run: "answer <value>" (the run resumed the interrupt; the
//     value is the parent's resume write, cut short, when the answer was a
//     single value), then the step below.
//   - source "loop": "step N: a, b" — the nodes that ran are the tasks
//     the parent planned (its Next; "+ sends" when that list is partial);
//     "step N" alone when the parent is on an older page.
//   - source "update": "edit of k1, k2 as node", from the metadata's
//     "edited" (engine.MetadataEdited: as-node → keys); "edit" alone for
//     checkpoints saved before it was recorded.
//   - source "fork" one step after its parent: "re-run from <parent>" —
//     the engine writes this fork, as upstream, when a run starts from an
//     earlier checkpoint (its parent is the checkpoint replayed, its step
//     the next). A fork with its parent off the page counts as a re-run
//     when a run wrote it (it has a run id).
//   - any other "fork": "fork (copy)" — an as-__copy__ update, a
//     sibling of the checkpoint it copies, one step after that one (so
//     two after their common parent).
//   - any checkpoint whose pending writes hold interrupts: "interrupt
//     (node)" per node that asked, after what made it.
func Happened(page []*engine.StateSnapshot, pending map[string][]checkpoints.PendingWrite) map[string][]web.Happening {
	in := make(map[string]*engine.StateSnapshot, len(page))
	for _, s := range page {
		in[s.Config.CheckpointID] = s
	}
	out := make(map[string][]web.Happening, len(page))
	for _, s := range page {
		id := s.Config.CheckpointID
		var parent *engine.StateSnapshot
		if s.ParentConfig != nil {
			parent = in[s.ParentConfig.CheckpointID]
		}
		var hs []web.Happening
		md := s.Metadata
		switch md.Source {
		case checkpoints.SourceInput:
			hs = append(hs, web.Happening{Kind: "input", Text: "input"})
		case checkpoints.SourceLoop:
			if parent != nil && parent.Metadata.RunID != md.RunID {
				if asked, answer := interruptsIn(pending[parent.Config.CheckpointID]); len(asked) > 0 {
					h := web.Happening{Kind: "answer", Text: "answer"}
					if answer != "" {
						h.Text += " " + answer
					}
					hs = append(hs, h)
				}
			}
			text := "step " + strconv.Itoa(md.Step)
			if parent != nil && len(parent.Next) > 0 {
				text += ": " + strings.Join(parent.Next, ", ")
			}
			hs = append(hs, web.Happening{Kind: "step", Text: text})
		case checkpoints.SourceUpdate:
			hs = append(hs, web.Happening{Kind: "edit", Text: editText(md.Extra[engine.MetadataEdited])})
		case checkpoints.SourceFork:
			rerun := md.RunID != ""
			if parent != nil {
				// (At the parent's own step: a re-run saved before forks
				// took the next step.)
				rerun = md.Step == parent.Metadata.Step+1 || md.Step == parent.Metadata.Step && md.RunID != ""
			}
			if rerun {
				text := "re-run"
				if s.ParentConfig != nil {
					text += " from " + shortID(s.ParentConfig.CheckpointID)
				}
				hs = append(hs, web.Happening{Kind: "rerun", Text: text})
			} else {
				hs = append(hs, web.Happening{Kind: "fork", Text: "fork (copy)"})
			}
		default:
			hs = append(hs, web.Happening{Kind: "other", Text: string(md.Source)})
		}
		if asked, _ := interruptsIn(pending[id]); len(asked) > 0 {
			hs = append(hs, web.Happening{Kind: "interrupt", Text: "interrupt (" + strings.Join(asked, ", ") + ")"})
		}
		out[id] = hs
	}
	return out
}

// editText reads an update checkpoint's "edited" metadata, which comes
// back from a saver as decoded JSON (map[string]any of []any) or, from an
// event in this process, as the engine built it.
func editText(w any) string {
	m, ok := w.(map[string]any)
	if !ok || len(m) == 0 {
		return "edit"
	}
	nodes := make([]string, 0, len(m))
	for n := range m {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var parts []string
	for _, n := range nodes {
		var keys []string
		switch ks := m[n].(type) {
		case []string:
			keys = ks
		case []any:
			for _, k := range ks {
				if s, ok := k.(string); ok {
					keys = append(keys, s)
				}
			}
		}
		what := "edit of " + strings.Join(keys, ", ")
		if len(keys) == 0 {
			what = "edit (no keys)"
		}
		parts = append(parts, what+" as "+n)
	}
	return strings.Join(parts, "; ")
}

// interruptsIn reads pending writes: the nodes whose interrupts were saved
// (sorted, once each) and the thread's single resume answer, cut short
// ("" when there is none: not answered yet, or answered by interrupt id).
func interruptsIn(ws []checkpoints.PendingWrite) (nodes []string, answer string) {
	for _, w := range ws {
		switch w.Channel {
		case checkpoints.InterruptChannel:
			var is []engine.Interruption
			if json.Unmarshal(w.Value, &is) != nil {
				continue
			}
			for _, i := range is {
				if i.Node != "" && !slices.Contains(nodes, i.Node) {
					nodes = append(nodes, i.Node)
				}
			}
		case checkpoints.ResumeChannel:
			if w.TaskID != nullTaskID {
				continue
			}
			var v any
			if json.Unmarshal(w.Value, &v) != nil {
				continue
			}
			answer = compactCut(v, answerPreviewBytes)
		}
	}
	slices.Sort(nodes)
	return nodes, answer
}

// compactCut is v as one line of JSON, cut to max bytes with "…".
func compactCut(v any, max int) string {
	s := encodeJSON(v, false)
	if len(s) > max {
		return textcut.Cut(s, max) + "…"
	}
	return s
}

// pendingOf reads the pending writes of the checkpoints of a page that
// can hold an interrupt a row should name: the head (a run may be waiting
// there), every other leaf (a branch that stopped at a question and was
// left), and every checkpoint another run continued from (a resume). A
// linear history of one run reads only its head. At most maxPendingLoads
// checkpoints are read, the head first.
func pendingOf(ctx context.Context, saver checkpoints.Saver, thread, head string, page []*engine.StateSnapshot) (map[string][]checkpoints.PendingWrite, error) {
	if saver == nil || len(page) == 0 {
		return nil, nil
	}
	runOf := make(map[string]string, len(page))
	for _, s := range page {
		runOf[s.Config.CheckpointID] = s.Metadata.RunID
	}
	hasChild := map[string]bool{}
	resumed := map[string]bool{}
	for _, s := range page {
		if s.ParentConfig == nil {
			continue
		}
		p := s.ParentConfig.CheckpointID
		hasChild[p] = true
		if r, ok := runOf[p]; ok && r != s.Metadata.RunID && s.Metadata.Source == checkpoints.SourceLoop {
			resumed[p] = true
		}
	}
	var want []string
	if _, ok := runOf[head]; ok {
		want = append(want, head)
	}
	for _, s := range page { // newest first: recent branches win the cap
		id := s.Config.CheckpointID
		if id != head && (resumed[id] || !hasChild[id]) {
			want = append(want, id)
		}
	}
	if len(want) > maxPendingLoads {
		want = want[:maxPendingLoads]
	}
	out := make(map[string][]checkpoints.PendingWrite, len(want))
	for _, id := range want {
		tup, err := saver.Get(ctx, checkpoints.Config{ThreadID: thread, CheckpointID: id})
		if err != nil {
			return nil, err
		}
		if tup != nil {
			out[id] = tup.PendingWrites
		}
	}
	return out, nil
}
