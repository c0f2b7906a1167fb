package models

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// MergeChunks adds two AIMessageChunks as upstream's `chunk + chunk`:
//
//   - string contents are concatenated; block lists merge blocks with the
//     same integer (or "lc_…") "index" and append the others;
//   - additional_kwargs and response_metadata merge as dicts: strings are
//     concatenated (except equal "id", "output_version", "model_provider",
//     "ls_provider" values), dicts merge recursively, lists merge like
//     block lists, equal values are kept and other ints added ("index",
//     "created" and "timestamp" take the right one);
//   - tool_call_chunks merge by index with their args concatenated, and
//     tool_calls are derived from them again by partial-JSON parsing:
//     arguments that are not a JSON object become invalid_tool_calls;
//   - usage is summed; the id is the first one a provider gave (not
//     "run-", "lc_run-" or "lc_"), else the first "run-"/"lc_run-" one,
//     else the first one; chunk_position is "last" if either is.
//
// Neither argument is modified.
func MergeChunks(a, b Message) (Message, error) {
	if a.Type != TypeAIChunk || b.Type != TypeAIChunk {
		return Message{}, fmt.Errorf("%w: MergeChunks adds two %s messages, got %q and %q", ErrInvalidMessage, TypeAIChunk, a.Type, b.Type)
	}
	out := Message{Type: TypeAIChunk, Name: a.Name}
	if out.Name == "" {
		out.Name = b.Name
	}
	var err error
	if out.Content, err = mergeContent(a.Content, b.Content); err != nil {
		return Message{}, fmt.Errorf("content: %w", err)
	}
	if out.AdditionalKwargs, err = mergeDicts(a.AdditionalKwargs, b.AdditionalKwargs); err != nil {
		return Message{}, fmt.Errorf("additional_kwargs: %w", err)
	}
	if out.ResponseMetadata, err = mergeDicts(a.ResponseMetadata, b.ResponseMetadata); err != nil {
		return Message{}, fmt.Errorf("response_metadata: %w", err)
	}
	chunks := mergeToolCallChunks(callChunks(a), callChunks(b))
	out.ToolCallChunks = chunks
	out.ToolCalls, out.InvalidToolCalls = toolCallsFromChunks(chunks)
	out.Usage = addUsage(a.Usage, b.Usage)
	out.ID = chunkID(a.ID, b.ID)
	if a.ChunkPosition == "last" || b.ChunkPosition == "last" {
		out.ChunkPosition = "last"
	}
	if len(a.Extra)+len(b.Extra) > 0 {
		out.Extra = map[string]json.RawMessage{}
		for k, v := range b.Extra {
			out.Extra[k] = v
		}
		for k, v := range a.Extra {
			out.Extra[k] = v
		}
	}
	return out, nil
}

// ToMessage turns a finished AIMessageChunk into an "ai" message (its
// tool call chunks and position dropped, as upstream's
// message_chunk_to_message). Other messages are returned as they are.
func ToMessage(m Message) Message {
	if m.Type != TypeAIChunk {
		return m
	}
	m.Type = TypeAI
	m.ToolCallChunks = nil
	m.ChunkPosition = ""
	return m
}

// callChunks returns a chunk's tool call chunks; a chunk built with tool
// calls and no chunks gets chunks made from them (without index), as
// upstream's AIMessageChunk does when it is constructed.
func callChunks(m Message) []ToolCallChunk {
	if len(m.ToolCallChunks) > 0 {
		return m.ToolCallChunks
	}
	var out []ToolCallChunk
	for _, c := range m.ToolCalls {
		args, _ := json.Marshal(emptyMap(c.Args))
		out = append(out, ToolCallChunk{Name: c.Name, Args: string(args), ID: c.ID})
	}
	for _, c := range m.InvalidToolCalls {
		out = append(out, ToolCallChunk{Name: c.Name, Args: c.Args, ID: c.ID})
	}
	return out
}

// mergeToolCallChunks merges right's chunks into left's: a chunk with an
// index matching one of left (and no conflicting id) is merged into it,
// others are appended.
func mergeToolCallChunks(left, right []ToolCallChunk) []ToolCallChunk {
	merged := append([]ToolCallChunk(nil), left...)
	for _, c := range right {
		target := -1
		if c.Index != nil {
			for i, l := range merged {
				if l.Index != nil && *l.Index == *c.Index && (l.ID == "" || c.ID == "" || l.ID == c.ID) {
					target = i
					break
				}
			}
		}
		if target < 0 {
			merged = append(merged, c)
			continue
		}
		l := &merged[target]
		// Strings concatenate, except an id equal to the one held.
		if !(l.ID != "" && l.ID == c.ID) {
			l.ID += c.ID
		}
		l.Name += c.Name
		l.Args += c.Args
		idx := *c.Index
		l.Index = &idx
	}
	return merged
}

func toolCallsFromChunks(chunks []ToolCallChunk) ([]ToolCall, []InvalidToolCall) {
	var calls []ToolCall
	var invalid []InvalidToolCall
	for _, c := range chunks {
		var args any = map[string]any{}
		var err error
		if c.Args != "" {
			args, err = ParsePartialJSON(c.Args)
		}
		if obj, ok := args.(map[string]any); ok && err == nil {
			calls = append(calls, ToolCall{Name: c.Name, Args: obj, ID: c.ID})
			continue
		}
		invalid = append(invalid, InvalidToolCall{Name: c.Name, Args: c.Args, ID: c.ID})
	}
	return calls, invalid
}

func chunkID(ids ...string) string {
	for _, id := range ids {
		if id != "" && !strings.HasPrefix(id, "run-") && !strings.HasPrefix(id, "lc_") {
			return id
		}
	}
	for _, id := range ids {
		if strings.HasPrefix(id, "run-") || strings.HasPrefix(id, "lc_run-") {
			return id
		}
	}
	for _, id := range ids {
		if id != "" {
			return id
		}
	}
	return ""
}

func mergeContent(a, b Content) (Content, error) {
	switch {
	case !a.IsList() && !b.IsList():
		return Text(a.Text + b.Text), nil
	case !a.IsList():
		// Upstream puts the string before the blocks as a bare item; we
		// keep blocks only, so it becomes a text block.
		if a.Text == "" {
			return Blocks(cloneBlocks(b.Blocks)...), nil
		}
		return Blocks(append([]Block{TextBlock(a.Text)}, cloneBlocks(b.Blocks)...)...), nil
	case !b.IsList():
		blocks := cloneBlocks(a.Blocks)
		if b.Text != "" {
			blocks = append(blocks, TextBlock(b.Text))
		}
		return Blocks(blocks...), nil
	}
	items, err := mergeLists(blocksToAny(a.Blocks), blocksToAny(b.Blocks))
	if err != nil {
		return Content{}, err
	}
	out := make([]Block, len(items))
	for i, it := range items {
		out[i] = Block(it.(map[string]any))
	}
	return Blocks(out...), nil
}

func cloneBlocks(bs []Block) []Block {
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = Block(deepCopy(map[string]any(b)).(map[string]any))
	}
	return out
}

func blocksToAny(bs []Block) []any {
	out := make([]any, len(bs))
	for i, b := range bs {
		out[i] = map[string]any(b)
	}
	return out
}

// mergeDicts is upstream's merge_dicts; it copies what it returns.
func mergeDicts(left, right map[string]any) (map[string]any, error) {
	if left == nil && right == nil {
		return nil, nil
	}
	merged := make(map[string]any, len(left)+len(right))
	for k, v := range left {
		merged[k] = deepCopy(v)
	}
	for k, rv := range right {
		lv, ok := merged[k]
		switch {
		case !ok || (lv == nil && rv != nil):
			merged[k] = deepCopy(rv)
		case rv == nil:
		case kindOf(lv) != kindOf(rv):
			return nil, fmt.Errorf("%w: key %q holds a %s on the left and a %s on the right", ErrInvalidMessage, k, kindOf(lv), kindOf(rv))
		default:
			switch l := lv.(type) {
			case string:
				r := rv.(string)
				if (k == "index" && strings.HasPrefix(l, "lc_")) || (isIDKey(k) && l == r) {
					continue
				}
				merged[k] = l + r
			case map[string]any:
				m, err := mergeDicts(l, rv.(map[string]any))
				if err != nil {
					return nil, err
				}
				merged[k] = m
			case []any:
				m, err := mergeLists(l, rv.([]any))
				if err != nil {
					return nil, err
				}
				merged[k] = m
			default:
				if equalJSON(lv, rv) {
					continue
				}
				li, lok := asInt(lv)
				ri, rok := asInt(rv)
				if !lok || !rok {
					return nil, fmt.Errorf("%w: key %q: cannot merge %v and %v (only strings, dicts, lists and ints merge; other values must be equal)", ErrInvalidMessage, k, lv, rv)
				}
				if k == "index" || k == "created" || k == "timestamp" {
					merged[k] = rv
				} else {
					merged[k] = json.Number(new(big.Int).Add(li, ri).String())
				}
			}
		}
	}
	return merged, nil
}

func isIDKey(k string) bool {
	return k == "id" || k == "output_version" || k == "model_provider" || k == "ls_provider"
}

// mergeLists is upstream's merge_lists: a dict with an integer (or
// "lc_…") index merges into the left dict with the same index (unless
// their ids differ), with its "type" dropped; other items are appended.
func mergeLists(left, right []any) ([]any, error) {
	merged := make([]any, len(left), len(left)+len(right))
	for i, v := range left {
		merged[i] = deepCopy(v)
	}
	for _, e := range right {
		d, ok := e.(map[string]any)
		idx, hasIdx := d["index"]
		if !ok || !hasIdx || !mergeableIndex(idx) {
			merged = append(merged, deepCopy(e))
			continue
		}
		target := -1
		for i, l := range merged {
			ld, ok := l.(map[string]any)
			if !ok {
				continue
			}
			lidx, ok := ld["index"]
			if !ok || !equalJSON(lidx, idx) {
				continue
			}
			if emptyID(ld["id"]) || emptyID(d["id"]) || equalJSON(ld["id"], d["id"]) {
				target = i
				break
			}
		}
		if target < 0 {
			merged = append(merged, deepCopy(e))
			continue
		}
		newE := d
		if _, hasType := d["type"]; hasType {
			newE = make(map[string]any, len(d))
			for k, v := range d {
				if k != "type" {
					newE[k] = v
				}
			}
		}
		m, err := mergeDicts(merged[target].(map[string]any), newE)
		if err != nil {
			return nil, err
		}
		merged[target] = m
	}
	return merged, nil
}

func mergeableIndex(v any) bool {
	if _, ok := asInt(v); ok {
		return true
	}
	s, ok := v.(string)
	return ok && strings.HasPrefix(s, "lc_")
}

func emptyID(v any) bool { return v == nil || v == "" }

// kindOf names a JSON value's kind, which two merged values must share.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case map[string]any:
		return "dict"
	case []any:
		return "list"
	case bool:
		return "bool"
	}
	if _, ok := asInt(v); ok {
		return "int"
	}
	return reflect.TypeOf(v).Kind().String()
}

// asInt reads an integer from a JSON-decoded or Go value.
func asInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case json.Number:
		n, ok := new(big.Int).SetString(string(x), 10)
		return n, ok
	case int:
		return big.NewInt(int64(x)), true
	case int64:
		return big.NewInt(x), true
	case int32:
		return big.NewInt(int64(x)), true
	case float64:
		if x == float64(int64(x)) && !strings.ContainsAny(strconv.FormatFloat(x, 'g', -1, 64), ".e") {
			return big.NewInt(int64(x)), true
		}
	}
	return nil, false
}

func equalJSON(a, b any) bool {
	if ai, ok := asInt(a); ok {
		bi, ok := asInt(b)
		return ok && ai.Cmp(bi) == 0
	}
	return reflect.DeepEqual(a, b)
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case Block:
		return deepCopy(map[string]any(x))
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}

// addUsage sums two usages key by key; a detail reported by neither stays
// unreported.
func addUsage(a, b *UsageMetadata) *UsageMetadata {
	if a == nil && b == nil {
		return nil
	}
	if a == nil || b == nil {
		u := *a0(a, b)
		u.InputTokenDetails = cloneInputDetails(u.InputTokenDetails)
		u.OutputTokenDetails = cloneOutputDetails(u.OutputTokenDetails)
		return &u
	}
	u := &UsageMetadata{
		InputTokens:  a.InputTokens + b.InputTokens,
		OutputTokens: a.OutputTokens + b.OutputTokens,
		TotalTokens:  a.TotalTokens + b.TotalTokens,
	}
	if a.InputTokenDetails != nil || b.InputTokenDetails != nil {
		l, r := orZero(a.InputTokenDetails), orZero(b.InputTokenDetails)
		u.InputTokenDetails = &InputTokenDetails{
			Audio: addCounts(l.Audio, r.Audio), CacheCreation: addCounts(l.CacheCreation, r.CacheCreation),
			CacheRead: addCounts(l.CacheRead, r.CacheRead), Ephemeral5m: addCounts(l.Ephemeral5m, r.Ephemeral5m),
			Ephemeral1h: addCounts(l.Ephemeral1h, r.Ephemeral1h), Extra: addExtra(l.Extra, r.Extra),
		}
	}
	if a.OutputTokenDetails != nil || b.OutputTokenDetails != nil {
		l, r := orZero(a.OutputTokenDetails), orZero(b.OutputTokenDetails)
		u.OutputTokenDetails = &OutputTokenDetails{
			Audio: addCounts(l.Audio, r.Audio), Reasoning: addCounts(l.Reasoning, r.Reasoning),
			Extra: addExtra(l.Extra, r.Extra),
		}
	}
	return u
}

func a0(a, b *UsageMetadata) *UsageMetadata {
	if a != nil {
		return a
	}
	return b
}

func orZero[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}

func cloneInputDetails(d *InputTokenDetails) *InputTokenDetails {
	if d == nil {
		return nil
	}
	c := *d
	c.Extra = addExtra(d.Extra, nil)
	return &c
}

func cloneOutputDetails(d *OutputTokenDetails) *OutputTokenDetails {
	if d == nil {
		return nil
	}
	c := *d
	c.Extra = addExtra(d.Extra, nil)
	return &c
}

func addCounts(a, b *int) *int {
	if a == nil && b == nil {
		return nil
	}
	return Int(orZero(a) + orZero(b))
}

func addExtra(a, b map[string]int) map[string]int {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make(map[string]int, len(a)+len(b))
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
