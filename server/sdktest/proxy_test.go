package sdktest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const (
	tid = "0b6b5e2e-6f2a-4a53-9a55-1f1b3c0c9d10"
	rid = "1f0c2a3b-4d5e-6f70-8192-a3b4c5d6e7f8"
)

// upstream is a fake API whose routes each break (or keep) one wire rule.
func upstream(t *testing.T) *url.URL {
	t.Helper()
	mux := http.NewServeMux()
	json := func(w http.ResponseWriter, code int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
	sse := func(w http.ResponseWriter, names ...string) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, ": heartbeat\n\n")
		for i, n := range names {
			fmt.Fprintf(w, "event: %s\ndata: {\"i\":%d}\nid: %d\n\n", n, i, i)
			w.(http.Flusher).Flush()
		}
	}
	mux.HandleFunc("GET /good", func(w http.ResponseWriter, r *http.Request) { json(w, 200, `{"ok":true}`) })
	mux.HandleFunc("GET /empty", func(w http.ResponseWriter, r *http.Request) { json(w, 200, ``) })
	mux.HandleFunc("GET /html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<p>hi</p>")
	})
	mux.HandleFunc("GET /missing", func(w http.ResponseWriter, r *http.Request) { json(w, 404, `{"detail":"no"}`) })
	mux.HandleFunc("DELETE /gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("POST /threads/{tid}/runs/wait", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Location", "/threads/"+r.PathValue("tid")+"/runs/"+rid)
		json(w, 200, "\n\n"+`{"done":true}`)
	})
	mux.HandleFunc("POST /threads/{tid}/runs", func(w http.ResponseWriter, r *http.Request) { json(w, 200, `{"run_id":"`+rid+`"}`) })
	mux.HandleFunc("POST /runs/wait", func(w http.ResponseWriter, r *http.Request) { json(w, 503, `{"detail":"busy"}`) })
	mux.HandleFunc("POST /threads/{tid}/runs/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Location", "/threads/"+r.PathValue("tid")+"/runs/"+rid)
		if r.URL.Query().Has("bad") {
			sse(w, "values", "metadata")
			return
		}
		sse(w, "metadata", "values", "values", "updates", "values")
	})
	mux.HandleFunc("GET /threads/{tid}/runs/{rid}/stream", func(w http.ResponseWriter, r *http.Request) {
		sse(w, "values", "values")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func do(t *testing.T, base, method, path string, header http.Header) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, string(b), err
}

// Each wire rule fails the exchange that breaks it, and only that one.
func TestProxyReportsEachBrokenRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		method, path string
		header       http.Header
		want         string // a broken rule's words; "" for none
	}{
		{"GET", "/good", nil, ""},
		{"GET", "/missing", nil, ""},
		{"DELETE", "/gone", nil, ""},
		{"POST", "/threads/" + tid + "/runs/wait", nil, ""},
		{"POST", "/threads/" + tid + "/runs/stream", nil, ""},
		{"GET", "/threads/" + tid + "/runs/" + rid + "/stream", http.Header{"Last-Event-Id": {"3"}}, ""},
		{"GET", "/empty", nil, "without a JSON body"},
		{"GET", "/html", nil, `a 200 answered "text/html"`},
		{"POST", "/threads/" + tid + "/runs", nil, "lacks Content-Location"},
		{"POST", "/runs/wait", nil, "answered 503"},
		{"POST", "/threads/" + tid + "/runs/stream?bad=1", nil, `first event is "values"`},
		{"GET", "/threads/" + tid + "/runs/" + rid + "/stream", nil, `first event is "values"`},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			t.Parallel()
			p := NewProxy(upstream(t))
			front := httptest.NewServer(p)
			defer front.Close()
			if _, _, err := do(t, front.URL, c.method, c.path, c.header); err != nil {
				t.Fatalf("read the body: %v", err)
			}
			front.Close() // every exchange has ended and been checked
			vs := p.Violations()
			switch {
			case c.want == "" && len(vs) > 0:
				t.Fatalf("a good exchange was reported: %v", vs)
			case c.want != "" && len(vs) != 1:
				t.Fatalf("want one violation with %q, got %v", c.want, vs)
			case c.want != "" && !strings.Contains(vs[0].Rule, c.want):
				t.Fatalf("want a violation with %q, got %v", c.want, vs[0])
			}
			if c.want != "" && !strings.Contains(vs[0].String(), c.method+" "+c.path) {
				t.Fatalf("the violation does not show the exchange: %v", vs[0])
			}
		})
	}
}

// A stream with the drop header is cut after the asked number of events,
// as a dropped connection (the client's read fails, it does not end
// cleanly), once per token; the header never reaches the server.
func TestProxyDropsAStreamOncePerToken(t *testing.T) {
	t.Parallel()
	up := upstream(t)
	p := NewProxy(up)
	front := httptest.NewServer(p)
	defer front.Close()
	path := "/threads/" + tid + "/runs/stream"
	h := http.Header{DropHeader: {"tok:2"}}

	_, body, err := do(t, front.URL, "POST", path, h)
	if err == nil {
		t.Fatalf("the cut stream ended cleanly; the SDK would not reconnect. body:\n%s", body)
	}
	if got := strings.Count(body, "event: "); got != 2 {
		t.Fatalf("got %d events before the cut, want 2:\n%s", got, body)
	}
	if !strings.HasSuffix(body, "id: 1\n\n") {
		t.Fatalf("the cut is not at an event's end:\n%q", body)
	}

	_, body, err = do(t, front.URL, "POST", path, h)
	if err != nil || strings.Count(body, "event: ") != 5 {
		t.Fatalf("the same token was cut again (err %v):\n%s", err, body)
	}
	if p.Drops() != 1 {
		t.Fatalf("Drops = %d, want 1", p.Drops())
	}
	if _, body, _ := do(t, front.URL, "GET", DropsPath, nil); strings.TrimSpace(body) != `{"cut":["tok"]}` {
		t.Fatalf("%s answered %s", DropsPath, body)
	}
	if res, _, _ := do(t, front.URL, "GET", "/good", http.Header{DropHeader: {"nonsense"}}); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a malformed drop header answered %d, want 400", res.StatusCode)
	}
	front.Close()
	if vs := p.Violations(); len(vs) != 0 {
		t.Fatalf("a cut stream was reported as a broken rule: %v", vs)
	}
}

// The SDK itself, cut by the proxy mid-stream, reconnects to the stream's
// Location with the last id it saw and receives each event exactly once:
// the mechanism the resumable-stream scenario relies on, checked against a
// fake server that replays after Last-Event-ID.
func TestProxyDropMakesTheSDKReconnect(t *testing.T) {
	t.Parallel()
	js, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(js, "node_modules", "@langchain", "langgraph-sdk")); err != nil {
		t.Fatalf("the JS SDK is not installed in %s; from the repository root run:\n\tmake sdk/deps", js)
	}
	const total = 6
	var mu sync.Mutex
	var resumedFrom []string
	mux := http.NewServeMux()
	serve := func(w http.ResponseWriter, from int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Location", "/threads/"+tid+"/runs/"+rid+"/stream")
		w.Header().Set("Content-Location", "/threads/"+tid+"/runs/"+rid)
		w.WriteHeader(http.StatusOK)
		for i := from; i < total; i++ {
			name := "values"
			if i == 0 {
				name = "metadata"
			}
			fmt.Fprintf(w, "event: %s\ndata: {\"i\":%d}\nid: %d\n\n", name, i, i)
			w.(http.Flusher).Flush()
		}
	}
	mux.HandleFunc("POST /threads/{tid}/runs/stream", func(w http.ResponseWriter, r *http.Request) { serve(w, 0) })
	mux.HandleFunc("GET /threads/{tid}/runs/{rid}/stream", func(w http.ResponseWriter, r *http.Request) {
		last := r.Header.Get("Last-Event-ID")
		mu.Lock()
		resumedFrom = append(resumedFrom, last)
		mu.Unlock()
		n, err := strconv.Atoi(last)
		if err != nil {
			http.Error(w, "bad Last-Event-ID", http.StatusUnprocessableEntity)
			return
		}
		serve(w, n+1)
	})
	up := httptest.NewServer(mux)
	defer up.Close()
	target, _ := url.Parse(up.URL)
	p := NewProxy(target)
	front := httptest.NewServer(p)
	defer front.Close()

	script := `
import { Client } from "@langchain/langgraph-sdk";
const c = new Client({ apiUrl: process.env.SUPERSTEP_URL, apiKey: null, defaultHeaders: { "` + DropHeader + `": "sdk:3" } });
const ids = [];
for await (const e of c.runs.stream("` + tid + `", "agent", { input: {}, streamResumable: true })) ids.push(e.event + ":" + e.id);
console.log(JSON.stringify(ids));
`
	cmd := exec.Command("node", "--input-type=module", "-e", script)
	cmd.Dir = js
	cmd.Env = append(cleanEnv(), "SUPERSTEP_URL="+front.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := `["metadata:0","values:1","values:2","values:3","values:4","values:5"]`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("the SDK received %s, want %s", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resumedFrom) != 1 || resumedFrom[0] != "2" {
		t.Fatalf("reconnects sent Last-Event-ID %q, want one with 2", resumedFrom)
	}
	if p.Drops() != 1 {
		t.Fatalf("Drops = %d, want 1", p.Drops())
	}
	front.Close()
	if vs := p.Violations(); len(vs) != 0 {
		t.Fatalf("violations: %v", vs)
	}
}
