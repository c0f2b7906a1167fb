package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/store"
)

// injectionKeys are the filter keys of the SQL-injection advisories
// (reference §4.1): each must be treated as an ordinary string.
var injectionKeys = []string{
	`x') OR '1'='1`,
	`x') OR 1=1 --`,
	`x') UNION SELECT 1,2,3,4,5,6,7 --`,
	`access') = 'public' OR '1'='1' OR json_extract(value, '$.`,
	`'; DROP TABLE checkpoints; --`,
}

// envelopes are serialized-object markers that a reviver could honour
// (§4.1); the Studio must keep them as plain data.
var envelopes = []string{
	`{"lc": 2, "type": "constructor", "id": ["os", "system"], "kwargs": {"command": "touch /tmp/pwned"}}`,
	`{"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}`,
	`{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "<script>alert(1)</script>"}}`,
}

const xss = "<script>alert(1)</script>"

// deepJSON nests n objects: {"a":{"a":…1…}}.
func deepJSON(n int) string {
	return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n)
}

type hostileFixture struct {
	*fixture
	store  store.Store
	cache  *cache.Memory
	thread string // an approval thread waiting on its question
	ckpt   string // its head checkpoint
}

// hostileSetup serves every Studio route (runs, store and cache, behind
// Secure) and leaves one interrupted thread, one store item and one cache
// entry for the hostile requests to try to change.
func hostileSetup(t *testing.T, s store.Store) *hostileFixture {
	t.Helper()
	m, err := runs.NewManager(map[string]engine.Compiled{"approval": approvalGraph(t), "flow": flowGraph(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	c := cache.NewMemory(nil)
	r := chi.NewRouter()
	handlers.Routes{Runs: m, Store: s, Cache: c}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
		_ = c.Close()
	})
	f := &hostileFixture{fixture: &fixture{srv: srv, runs: m}, store: s, cache: c}
	th, err := m.Start(context.Background(), "approval", "", nil, runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if th = f.wait(t, th.ID); th.Status != runs.StatusInterrupted {
		t.Fatalf("approval thread ended %s, want interrupted", th.Status)
	}
	f.thread = th.ID
	f.ckpt = f.history(t, "approval", th.ID)[0].Config.CheckpointID
	mustPut(t, s, []string{"notes"}, "keep", map[string]any{"text": "keep me", "access": "private"})
	if err := c.Set(context.Background(), []cache.Entry{{Key: cache.Key{Namespace: "lookup", Key: "00ff"}, Value: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// snapshot is everything a state-changing route could change.
func (f *hostileFixture) snapshot(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	ths := f.list(t, runs.ThreadFilter{})
	fmt.Fprintf(&b, "threads=%d history=%d\n", len(ths), len(f.history(t, "approval", f.thread)))
	th, err := f.runs.Thread(context.Background(), f.thread)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "status=%s values=%v\n", th.Status, f.values(t, "approval", f.thread))
	items, err := store.Search(ctx, f.store, store.SearchOp{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		v, _ := json.Marshal(it.Value)
		fmt.Fprintf(&b, "item %q %q %s\n", it.Namespace, it.Key, v)
	}
	infos, err := f.cache.List(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		fmt.Fprintf(&b, "cache %q %q\n", in.Key.Namespace, in.Key.Key)
	}
	return b.String()
}

// hostileCase is one request that must be refused with a 4xx.
type hostileCase struct {
	name   string
	method string
	path   string // %T is the thread, %C its head checkpoint
	form   url.Values
	code   int
	msg    string // part of the page's message
}

func (f *hostileFixture) path(p string) string {
	return strings.NewReplacer("%T", f.thread, "%C", f.ckpt).Replace(p)
}

func hostileCases() []hostileCase {
	var cs []hostileCase
	add := func(c hostileCase) { cs = append(cs, c) }
	post := func(name, path string, form url.Values, code int, msg string) {
		add(hostileCase{name: name, method: http.MethodPost, path: path, form: form, code: code, msg: msg})
	}
	get := func(name, path string, code int, msg string) {
		add(hostileCase{name: name, method: http.MethodGet, path: path, code: code, msg: msg})
	}
	// Bodies whose JSON the Studio refuses, on every route that takes JSON.
	badJSON := []struct{ name, value, msg string }{
		{"deep 65", deepJSON(65), "deeper than"},
		{"duplicate keys", `{"answer": "a", "answer": "b"}`, "answer"},
		{"script in bad JSON", `{"answer": "` + xss + `"`, "bad JSON"},
		{"trailing data", `{"answer": "a"} {"answer": "b"}`, "bad JSON"},
		{"raw NUL byte", "{\"answer\": \"a\x00b\"}", "bad JSON"},
	}
	for _, j := range badJSON {
		post("start input: "+j.name, "/graphs/approval/runs", url.Values{"input": {j.value}}, http.StatusBadRequest, j.msg)
		post("resume value: "+j.name, "/threads/%T/resume", url.Values{"action": {"respond"}, "value": {j.value}}, http.StatusBadRequest, j.msg)
		post("edit value: "+j.name, "/threads/%T/checkpoints/%C/update", url.Values{"key": {"answer"}, "value": {j.value}}, http.StatusBadRequest, j.msg)
		post("store value: "+j.name, "/store/put", url.Values{"namespace": {"notes"}, "key": {"keep"}, "value": {j.value}}, http.StatusBadRequest, j.msg)
		get("store filter: "+j.name, "/store/search?filter="+url.QueryEscape(j.value), http.StatusBadRequest, j.msg)
	}
	// Injection keys where a key names a state channel or a node.
	for i, k := range injectionKeys {
		post(fmt.Sprintf("start input key %d", i), "/graphs/approval/runs", url.Values{"input": {fmt.Sprintf(`{%q: 1}`, k)}}, http.StatusBadRequest, "")
		post(fmt.Sprintf("edit key %d", i), "/threads/%T/checkpoints/%C/update", url.Values{"key": {k}, "value": {`1`}}, http.StatusBadRequest, "")
		post(fmt.Sprintf("edit as-node %d", i), "/threads/%T/checkpoints/%C/update", url.Values{"key": {"answer"}, "value": {`"x"`}, "as_node": {k}}, http.StatusBadRequest, "is not a node")
		post(fmt.Sprintf("resume interrupt id %d", i), "/threads/%T/resume", url.Values{"action": {"approve"}, "interrupt_id": {k}}, http.StatusBadRequest, "")
		// Deleting a key that is not there is an idempotent no-op.
		post(fmt.Sprintf("store delete key %d", i), "/store/delete", url.Values{"namespace": {"notes"}, "key": {k}, "confirm": {"yes"}}, http.StatusSeeOther, "")
		post(fmt.Sprintf("cache clear namespace %d", i), "/cache/clear", url.Values{"namespace": {k}}, http.StatusBadRequest, "nothing is cached")
		post(fmt.Sprintf("start graph name %d", i), "/graphs/"+url.PathEscape(k)+"/runs", url.Values{}, http.StatusNotFound, "")
	}
	// An escaped NUL decodes fine but no checkpointer may store it: the
	// edit is the request's fault (this was a 500 before statusOf knew
	// checkpoints.ErrInvalidValue).
	post("edit value escaped NUL", "/threads/%T/checkpoints/%C/update", url.Values{"key": {"answer"}, "value": {`"a\u0000b"`}}, http.StatusBadRequest, "NUL")
	// Likewise an answer: it was accepted (303) and then failed the run.
	post("resume value escaped NUL", "/threads/%T/resume", url.Values{"action": {"respond"}, "value": {`{"note": "a\u0000b"}`}}, http.StatusBadRequest, "NUL")
	post("start input escaped NUL", "/graphs/approval/runs", url.Values{"input": {`{"answer": "a\u0000b"}`}}, http.StatusBadRequest, "NUL")
	post("resume action script", "/threads/%T/resume", url.Values{"action": {xss}}, http.StatusBadRequest, "action")
	// A bad ?expand= (where the form leads back to) is refused before the
	// form does anything.
	post("resume expand script", "/threads/%T/resume?expand="+url.QueryEscape(xss), url.Values{"action": {"approve"}}, http.StatusBadRequest, "")
	post("cancel expand not a subgraph", "/threads/%T/cancel?expand=answer", url.Values{}, http.StatusBadRequest, "")
	post("edit as-node script", "/threads/%T/checkpoints/%C/update", url.Values{"key": {"answer"}, "value": {`"x"`}, "as_node": {xss}}, http.StatusBadRequest, "is not a node")
	post("start recursion limit script", "/graphs/approval/runs", url.Values{"recursion_limit": {xss}}, http.StatusBadRequest, "not a whole number")
	post("store namespace NUL", "/store/put", url.Values{"namespace": {"notes\x00x"}, "key": {"k"}, "value": {`{}`}}, http.StatusBadRequest, "")
	post("store key NUL", "/store/put", url.Values{"namespace": {"notes"}, "key": {"k\x00"}, "value": {`{}`}}, http.StatusBadRequest, "")
	post("store namespace traversal", "/store/put", url.Values{"namespace": {"../.."}, "key": {"k"}, "value": {`{}`}}, http.StatusBadRequest, "")
	post("cache clear NUL", "/cache/clear", url.Values{"namespace": {"lookup\x00"}}, http.StatusBadRequest, "")
	post("cache clear traversal", "/cache/clear", url.Values{"namespace": {"../lookup"}}, http.StatusBadRequest, "")
	post("cache clear script", "/cache/clear", url.Values{"namespace": {xss}}, http.StatusBadRequest, "")
	// Ids in URLs: traversal, encoded traversal, markup.
	ids := map[string]string{
		"dotdot":         "..%2F..%2Fetc%2Fpasswd",
		"encoded dotdot": "%252e%252e%252fetc",
		"dots":           "..",
		"script":         url.PathEscape(xss),
		"NUL":            "a%00b",
		"injection":      url.PathEscape(injectionKeys[0]),
	}
	for name, id := range ids {
		post("rerun checkpoint "+name, "/threads/%T/checkpoints/"+id+"/rerun", url.Values{}, http.StatusBadRequest, "is not a checkpoint id")
		post("edit checkpoint "+name, "/threads/%T/checkpoints/"+id+"/update", url.Values{"key": {"answer"}, "value": {`"x"`}}, http.StatusBadRequest, "is not a checkpoint id")
		post("continue thread "+name, "/threads/"+id+"/continue", url.Values{}, http.StatusNotFound, "")
		post("resume thread "+name, "/threads/"+id+"/resume", url.Values{"action": {"approve"}}, http.StatusNotFound, "")
		post("cancel thread "+name, "/threads/"+id+"/cancel", url.Values{}, http.StatusNotFound, "")
		get("thread page "+name, "/threads/"+id, http.StatusNotFound, "")
		get("thread websocket "+name, "/threads/"+id+"/ws", http.StatusNotFound, "")
		get("tree page "+name, "/threads/%T/checkpoints/"+id, http.StatusBadRequest, "is not a checkpoint id")
		get("value page "+name, "/threads/%T/checkpoints/"+id+"/values/answer", http.StatusBadRequest, "is not a checkpoint id")
		get("tree before "+name, "/threads/%T/checkpoints?before="+id, http.StatusBadRequest, "is not a checkpoint id")
		get("diff "+name, "/threads/%T/diff?from="+id+"&to=%C", http.StatusBadRequest, "")
	}
	get("tree limit negative", "/threads/%T/checkpoints?limit=-1", http.StatusBadRequest, "limit")
	get("tree limit huge", "/threads/%T/checkpoints?limit=99999999999999999999", http.StatusBadRequest, "limit")
	get("value key script", "/threads/%T/checkpoints/%C/values/"+url.PathEscape(xss), http.StatusNotFound, "")
	get("store items traversal", "/store/items?ns=..%2F..", http.StatusBadRequest, "")
	get("store item NUL key", "/store/item?ns=notes&key=a%00", http.StatusBadRequest, "NUL")
	post("store delete NUL key", "/store/delete", url.Values{"namespace": {"notes"}, "key": {"keep\x00"}}, http.StatusBadRequest, "NUL")
	post("store value escaped NUL", "/store/put", url.Values{"namespace": {"notes"}, "key": {"keep"}, "value": {`{"text": "a\u0000b"}`}}, http.StatusBadRequest, "NUL")
	get("store search op", "/store/search?filter="+url.QueryEscape(`{"text": {"$where": "1=1"}}`), http.StatusBadRequest, "")
	get("store search op injection", "/store/search?filter="+url.QueryEscape(`{"text": {"$eq') OR 1=1 --": "x"}}`), http.StatusBadRequest, "")
	get("store tree depth script", "/store?depth="+url.QueryEscape(xss), http.StatusBadRequest, "")
	return cs
}

// Every hostile request is refused with a 4xx that says what was wrong,
// changes nothing (thread history, store items, cache entries), and never
// reflects the input's markup unescaped.
func TestHostileInputsAreRefused(t *testing.T) {
	t.Parallel()
	for _, b := range storeBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := hostileSetup(t, b.open(t))
			before := f.snapshot(t)
			for _, c := range hostileCases() {
				t.Run(c.name, func(t *testing.T) {
					var r response
					if c.method == http.MethodGet {
						r = f.get(t, f.path(c.path))
					} else {
						r = f.post(t, f.path(c.path), c.form)
					}
					if r.code != c.code {
						t.Fatalf("status %d, want %d; body %.1500s", r.code, c.code, r.body)
					}
					if r.code == http.StatusSeeOther {
						if after := f.snapshot(t); after != before {
							t.Fatalf("the no-op changed something:\nbefore %s\nafter  %s", before, after)
						}
						return
					}
					if !strings.Contains(r.body, "<html") && !strings.Contains(r.body, "<!doctype") && !strings.Contains(r.body, "<!DOCTYPE") {
						t.Fatalf("the refusal is not a page: %.500s", r.body)
					}
					if c.msg != "" && !strings.Contains(r.body, c.msg) {
						t.Fatalf("the page does not say %q: %.3000s", c.msg, r.body)
					}
					if strings.Contains(r.body, xss) {
						t.Fatalf("the page reflects %s unescaped", xss)
					}
					if after := f.snapshot(t); after != before {
						t.Fatalf("the request changed something:\nbefore %s\nafter  %s", before, after)
					}
				})
			}
		})
	}
}

// A body over MaxBodyBytes is refused with 413 on every state-changing
// route before anything is written.
func TestHostileBodyOver1MiB(t *testing.T) {
	t.Parallel()
	f := hostileSetup(t, memoryStore(t))
	before := f.snapshot(t)
	big := `{"answer": "` + strings.Repeat("x", handlers.MaxBodyBytes) + `"}`
	for _, c := range []struct{ path, field string }{
		{"/graphs/approval/runs", "input"},
		{"/threads/%T/resume", "value"},
		{"/threads/%T/checkpoints/%C/update", "value"},
		{"/store/put", "value"},
		{"/cache/clear", "namespace"},
	} {
		form := url.Values{"action": {"respond"}, "key": {"answer"}, "namespace": {"notes"}}
		form.Set(c.field, big)
		r := f.post(t, f.path(c.path), form)
		want(t, r, http.StatusRequestEntityTooLarge, "larger than 1 MiB")
		if after := f.snapshot(t); after != before {
			t.Fatalf("%s: a refused body changed something:\nbefore %s\nafter  %s", c.path, before, after)
		}
	}
}

// A cross-site form post to any state-changing route is refused with 403
// and changes nothing, even when the form itself is valid.
func TestHostileCrossSitePost(t *testing.T) {
	t.Parallel()
	f := hostileSetup(t, memoryStore(t))
	before := f.snapshot(t)
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/graphs/flow/runs", url.Values{}},
		{"/threads/%T/resume", url.Values{"action": {"approve"}}},
		{"/threads/%T/cancel", url.Values{}},
		{"/threads/%T/checkpoints/%C/update", url.Values{"key": {"answer"}, "value": {`"pwned"`}}},
		{"/threads/%T/checkpoints/%C/rerun", url.Values{}},
		{"/threads/%T/continue", url.Values{}},
		{"/store/put", putForm("notes", "keep", `{"text": "pwned"}`)},
		{"/store/delete", url.Values{"namespace": {"notes"}, "key": {"keep"}}},
		{"/cache/clear", url.Values{"namespace": {"lookup"}}},
	} {
		for _, site := range []map[string]string{
			{"Sec-Fetch-Site": "cross-site"},
			{"Origin": "https://evil.example"},
		} {
			h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
			for k, v := range site {
				h[k] = v
			}
			r := f.do(t, http.MethodPost, f.path(c.path), strings.NewReader(c.form.Encode()), h)
			if r.code != http.StatusForbidden || !strings.Contains(r.body, "another site") {
				t.Fatalf("%s with %v = %d, want 403 saying why: %.500s", c.path, site, r.code, r.body)
			}
			if after := f.snapshot(t); after != before {
				t.Fatalf("%s: a cross-site post changed something:\nbefore %s\nafter  %s", c.path, before, after)
			}
		}
	}
}

// A websocket opened from another site's page is refused with 403 before
// it subscribes; the Studio's own origin is accepted.
func TestHostileCrossSiteWebsocket(t *testing.T) {
	t.Parallel()
	f := hostileSetup(t, memoryStore(t))
	u := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/threads/" + f.thread + "/ws"
	ctx := context.Background()
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil {
		c.CloseNow()
		t.Fatal("a cross-site websocket was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site websocket = %v, %v; want 403", resp, err)
	}
	c, _, err = websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {f.srv.URL}}})
	if err != nil {
		t.Fatalf("same-origin websocket refused: %v", err)
	}
	c.CloseNow()
}

// Serialized-object envelopes, injection keys, a lone surrogate and an
// escaped NUL are stored as plain data: what comes back is what was put
// (the surrogate as U+FFFD, as any JSON decoder in Go gives it), and the
// item page shows it escaped.
func TestHostileStoreDataRoundTrips(t *testing.T) {
	t.Parallel()
	type tc struct{ name, key, value string }
	var cases []tc
	for i, e := range envelopes {
		cases = append(cases, tc{fmt.Sprintf("envelope %d", i), fmt.Sprintf("env%d", i), e})
	}
	for i, k := range injectionKeys {
		cases = append(cases, tc{fmt.Sprintf("injection key %d", i), k, fmt.Sprintf(`{%q: %q}`, k, k)})
	}
	cases = append(cases,
		tc{"lone surrogate", "surrogate", `{"text": "a\ud800b"}`},
		tc{"nested envelope", "nested", `{"messages": [` + envelopes[0] + `, ` + envelopes[1] + `]}`},
	)
	for _, b := range storeBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			f := storeSetup(t, s)
			for _, c := range cases {
				r := f.post(t, "/store/put", putForm("hostile", c.key, c.value))
				if r.code != http.StatusSeeOther {
					t.Fatalf("%s: put = %d: %.1500s", c.name, r.code, r.body)
				}
				var wantV map[string]any
				if err := json.Unmarshal([]byte(c.value), &wantV); err != nil {
					t.Fatal(err)
				}
				it, err := store.Get(context.Background(), s, []string{"hostile"}, c.key)
				if err != nil || it == nil {
					t.Fatalf("%s: Get = %v, %v", c.name, it, err)
				}
				if !reflect.DeepEqual(it.Value, wantV) {
					t.Fatalf("%s: stored %#v, want %#v", c.name, it.Value, wantV)
				}
				page := f.get(t, r.location)
				want(t, page, http.StatusOK)
				if strings.Contains(page.body, xss) {
					t.Fatalf("%s: the item page reflects markup unescaped", c.name)
				}
			}
			// An injection key as a filter key matches only items that
			// really have that key with that value.
			for _, k := range injectionKeys {
				q := "/store/search?ns=hostile&filter=" + url.QueryEscape(fmt.Sprintf(`{%q: %q}`, k, k))
				r := f.get(t, q)
				if strings.HasSuffix(k, ".") {
					// A dotted path with an empty last field is refused.
					want(t, r, http.StatusBadRequest, "empty field name")
					continue
				}
				want(t, r, http.StatusOK)
				if got := strings.Count(r.body, `href="/store/item?`); got != 1 {
					t.Fatalf("filter on %q lists %d items, want 1: %.3000s", k, got, r.body)
				}
			}
		})
	}
}

// An envelope given as a resume answer is data: the node receives the
// map itself, not whatever it names.
func TestHostileEnvelopeAsResumeAnswer(t *testing.T) {
	t.Parallel()
	f := hostileSetup(t, memoryStore(t))
	r := f.post(t, "/threads/"+f.thread+"/resume", url.Values{"action": {"respond"}, "value": {envelopes[0]}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("resume = %d: %.1500s", r.code, r.body)
	}
	f.wait(t, f.thread)
	var env map[string]any
	if err := json.Unmarshal([]byte(envelopes[0]), &env); err != nil {
		t.Fatal(err)
	}
	if got, w := f.values(t, "approval", f.thread)["answer"], fmt.Sprint(env); got != w {
		t.Fatalf("answer = %v, want the envelope as data %v", got, w)
	}
	page := f.get(t, "/threads/"+f.thread+"/checkpoints")
	want(t, page, http.StatusOK)
}
