package checkpointstest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
)

// InjectionKeys are the metadata filter keys of upstream's SQL injection
// advisory (CVE-2025-67644), plus a few of our own. A saver must treat
// each as a plain key: an error or no rows, and no change to the store.
var InjectionKeys = []string{
	`x') OR '1'='1`,
	`x') OR 1=1 --`,
	`x') UNION SELECT 1,2,3,4,5,6,7 --`,
	`access') = 'public' OR '1'='1' OR json_extract(value, '$.`,
	`'; DROP TABLE checkpoints; --`,
	`source" : "loop"} OR 1=1 --`,
	`$.source`,
	`{source}`,
}

func init() {
	register("Y11_RejectsNULAndLoneSurrogates", func(t *testing.T, s checkpoints.Saver) {
		cfg := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, newCheckpoint(t, map[string]any{"a": "ok"}, map[string]int64{"a": 1}), checkpoints.Metadata{Source: checkpoints.SourceInput}, map[string]int64{"a": 1})
		base := mustGet(t, s, cfg)
		bad := map[string]json.RawMessage{
			"escaped NUL":         json.RawMessage(`"a\u0000b"`),
			"NUL in a key":        json.RawMessage(`{"k\u0000":1}`),
			"raw NUL":             json.RawMessage("\"a\x00b\""),
			"lone high surrogate": json.RawMessage(`"\ud800"`),
			"lone low surrogate":  json.RawMessage(`["\udc00"]`),
			"reversed pair":       json.RawMessage(`"\udc00\ud800"`),
			"high then letter":    json.RawMessage(`"\ud83dx"`),
			"invalid UTF-8":       json.RawMessage("\"\xed\xa0\x80\""),
			"not JSON":            json.RawMessage(`{"a":`),
			"empty":               json.RawMessage(``),
		}
		for name, v := range bad {
			cp := newCheckpoint(t, nil, map[string]int64{"a": 1, "b": 2})
			cp.ChannelValues["b"] = v
			if _, err := s.Put(ctx(), cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"b": 2}); !errors.Is(err, checkpoints.ErrInvalidValue) {
				t.Errorf("%s as a value: Put = %v, want ErrInvalidValue", name, err)
			}
			md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Extra: map[string]any{"note": v}}
			if _, err := s.Put(ctx(), cfg, newCheckpoint(t, nil, nil), md, nil); err == nil && len(v) > 0 {
				t.Errorf("%s in metadata: Put succeeded", name)
			}
			if err := s.PutWrites(ctx(), cfg, []checkpoints.Write{{Channel: "ok", Value: json.RawMessage(`1`)}, {Channel: "x", Value: v}}, "task", ""); !errors.Is(err, checkpoints.ErrInvalidValue) {
				t.Errorf("%s as a write: PutWrites = %v, want ErrInvalidValue", name, err)
			}
		}
		for name, md := range map[string]checkpoints.Metadata{
			"NUL in a metadata string": {Source: checkpoints.SourceLoop, Extra: map[string]any{"my_key": "\x00abc"}},
			"NUL in a metadata key":    {Source: checkpoints.SourceLoop, Extra: map[string]any{"my\x00key": "abc"}},
			"invalid UTF-8 in run_id":  {Source: checkpoints.SourceLoop, RunID: "\xff"},
			"NUL in parents":           {Source: checkpoints.SourceLoop, Parents: map[string]string{"": "a\x00"}},
		} {
			if _, err := s.Put(ctx(), cfg, newCheckpoint(t, nil, nil), md, nil); !errors.Is(err, checkpoints.ErrInvalidValue) {
				t.Errorf("%s: Put = %v, want ErrInvalidValue", name, err)
			}
		}
		for name, c := range map[string]checkpoints.Config{
			"NUL in thread":     {ThreadID: "t\x00"},
			"NUL in namespace":  {ThreadID: "t", Namespace: "\x00"},
			"invalid UTF-8 ids": {ThreadID: "t", CheckpointID: "\xff"},
		} {
			if _, err := s.Put(ctx(), c, newCheckpoint(t, nil, nil), checkpoints.Metadata{}, nil); !errors.Is(err, checkpoints.ErrInvalidConfig) {
				t.Errorf("%s: Put = %v, want ErrInvalidConfig", name, err)
			}
			if got, err := s.Get(ctx(), c); err != nil || got != nil {
				t.Errorf("%s: Get = %v, %v; want nothing and no error", name, got, err)
			}
		}
		cp := newCheckpoint(t, nil, map[string]int64{"bad\x00channel": 1})
		if _, err := s.Put(ctx(), cfg, cp, checkpoints.Metadata{}, nil); !errors.Is(err, checkpoints.ErrInvalidValue) {
			t.Errorf("NUL in a channel name: Put = %v, want ErrInvalidValue", err)
		}
		for _, node := range []string{"bad\x00node", "\xff"} {
			cp := newCheckpoint(t, nil, nil)
			cp.Next = []string{"ok", node}
			if _, err := s.Put(ctx(), cfg, cp, checkpoints.Metadata{}, nil); !errors.Is(err, checkpoints.ErrInvalidValue) {
				t.Errorf("next node %q: Put = %v, want ErrInvalidValue", node, err)
			}
		}
		// Surrogate pairs and other escapes are fine.
		good := json.RawMessage(`"\ud83d\ude00 \u00e9 \\u0000 \" \n"`)
		gcp := newCheckpoint(t, nil, map[string]int64{"a": 1, "b": 2})
		gcp.ChannelValues["b"] = good
		gcfg := mustPut(t, s, cfg, gcp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Extra: map[string]any{"emoji": "😀"}}, map[string]int64{"b": 2})
		if got := mustGet(t, s, gcfg); string(got.Checkpoint.ChannelValues["b"]) != string(good) || got.Metadata.Extra["emoji"] != "😀" {
			t.Errorf("valid escapes did not round-trip: %s %v", got.Checkpoint.ChannelValues["b"], got.Metadata.Extra)
		}
		// Nothing of the rejected calls was written.
		all := mustList(t, s, checkpoints.ListQuery{AllNamespaces: true}, checkpoints.ListOptions{})
		if len(all) != 2 {
			t.Errorf("rejected puts left checkpoints: %d, want 2", len(all))
		}
		expectTuple(t, "untouched", mustGet(t, s, cfg), base)
		// A filter that cannot match anything stored is an error.
		for _, v := range []any{"\x00abc", json.RawMessage(`"\ud800"`)} {
			if _, err := s.List(ctx(), checkpoints.ListQuery{}, checkpoints.ListOptions{Filter: map[string]any{"my_key": v}}); !errors.Is(err, checkpoints.ErrInvalidFilter) {
				t.Errorf("filter %q: err = %v, want ErrInvalidFilter", v, err)
			}
		}
	})

	register("Y15_InjectionKeysAreJustKeys", func(t *testing.T, s checkpoints.Saver) {
		for i := range 3 {
			mustPut(t, s, checkpoints.Config{ThreadID: "t"}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, Extra: map[string]any{"access": "private"}}, nil)
		}
		for _, key := range InjectionKeys {
			for _, v := range []any{"public", "1", 1, true, nil, map[string]any{}} {
				got, err := s.List(ctx(), checkpoints.ListQuery{}, checkpoints.ListOptions{Filter: map[string]any{key: v}})
				if err == nil && len(got) != 0 {
					t.Errorf("filter key %q matched %d checkpoints", key, len(got))
				}
			}
		}
		// A key that looks like an injection is stored and found as a key.
		key := InjectionKeys[0]
		c := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop, Extra: map[string]any{key: "v"}}, nil)
		if got := mustList(t, s, checkpoints.ListQuery{}, checkpoints.ListOptions{Filter: map[string]any{key: "v"}}); len(got) != 1 || got[0].Config != c {
			t.Errorf("literal key %q: got %d tuples", key, len(got))
		}
		if got := mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{}); len(got) != 4 {
			t.Errorf("after the injection battery the thread has %d checkpoints, want 4", len(got))
		}
	})

	register("SerializedObjectEnvelopesStayData", func(t *testing.T, s checkpoints.Saver) {
		// Envelopes that upstream's decoders once revived into objects or
		// secrets (CVE-2025-64439, CVE-2025-68664) are plain JSON here.
		envelopes := []json.RawMessage{
			json.RawMessage(`{"lc":2,"type":"constructor","id":["os","system"],"kwargs":{"command":"touch /tmp/pwned"}}`),
			json.RawMessage(`{"lc":1,"type":"secret","id":["OPENAI_API_KEY"]}`),
			json.RawMessage(`{"__type__":"exec","code":"rm -rf /"}`),
		}
		for i, env := range envelopes {
			cp := newCheckpoint(t, nil, map[string]int64{"state": 1})
			cp.ChannelValues["state"] = env
			var meta any
			if err := json.Unmarshal(env, &meta); err != nil {
				t.Fatal(err)
			}
			cfg := mustPut(t, s, checkpoints.Config{ThreadID: "t", Namespace: string(rune('a' + i))}, cp, checkpoints.Metadata{Source: checkpoints.SourceInput, Extra: map[string]any{"payload": meta}}, map[string]int64{"state": 1})
			mustWrite(t, s, cfg, "task", checkpoints.Write{Channel: "state", Value: env})
			got := mustGet(t, s, cfg)
			if string(got.Checkpoint.ChannelValues["state"]) != string(env) || string(got.PendingWrites[0].Value) != string(env) {
				t.Errorf("envelope %d came back as %s / %s", i, got.Checkpoint.ChannelValues["state"], got.PendingWrites[0].Value)
			}
			if _, ok := got.Metadata.Extra["payload"].(map[string]any); !ok {
				t.Errorf("envelope %d in metadata came back as %T", i, got.Metadata.Extra["payload"])
			}
		}
	})
}
