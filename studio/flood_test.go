package studio_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/studio"
)

// floodSockets is how many websockets the flood opens and never reads.
const floodSockets = 2000

// floodHeapBound is the most the Go heap may grow while they are open:
// the client's side of every socket is in this process too.
const floodHeapBound = 96 << 20

// rawSocket opens a websocket to path from the loopback address from, as
// a client that reads the handshake's answer and nothing after it: no
// goroutine, no buffer drained.
func rawSocket(t *testing.T, srv *httptest.Server, from, path string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		path, srv.Listener.Addr(), base64.StdEncoding.EncodeToString(key))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReaderSize(c, 256)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 101 ") {
		t.Fatalf("handshake from %s: %q, %v", from, status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("handshake from %s: %v", from, err)
		}
		if line == "\r\n" {
			return c
		}
	}
}

// A client opens 2,000 websockets to a thread and never reads them. The
// Studio holds at most SocketLimits.PerClient of them and closes the rest
// with 1013 and a reason; its heap stays under floodHeapBound; /healthz
// stays 200 on its own connection; and a tab from another address still
// loads its page and its live socket in under a second.
//
// Not parallel: the heap it measures must be its own sockets', not other
// tests' allocations.
func TestWebsocketFloodIsBounded(t *testing.T) {
	ctx := context.Background()
	dbURL, _ := schemaURL(t)
	s, err := studio.Open(ctx, studio.Config{DatabaseURL: dbURL, Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
		g, err := reviewGraph(b.Checkpointer)
		return map[string]engine.Compiled{"review": g}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Runs().Start(ctx, "review", "flooded", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th, err := s.Runs().Wait(ctx, "flooded"); err != nil || th.Status != runs.StatusInterrupted {
		t.Fatalf("thread: %+v, %v", th, err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for range floodSockets {
		rawSocket(t, srv, "127.0.0.1", "/threads/flooded/ws")
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d non-reading sockets: heap grew %.1f MiB (bound %d MiB)", floodSockets, float64(grew)/(1<<20), floodHeapBound>>20)
	if grew > floodHeapBound {
		t.Errorf("heap grew %d MiB under the flood; the bound is %d MiB", grew>>20, floodHeapBound>>20)
	}

	// One more from the flooding address is refused, and says why.
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/threads/flooded/ws"
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || !strings.Contains(ce.Reason, "your address") {
		t.Fatalf("a socket past the per-client limit: %v, want closed with 1013 naming the limit", err)
	}

	// Health answers, from its own connection.
	start := time.Now()
	res, err := http.Get(srv.URL + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz under the flood: %v %v", res, err)
	}
	res.Body.Close()

	// A tab from another address loads its page and goes live.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	res, err = other.Do(pageRequest(t, srv.URL+"/threads/flooded"))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the thread page under the flood: %v %v", res, err)
	}
	res.Body.Close()
	tab, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: other})
	if err != nil {
		t.Fatalf("a tab from another address: %v", err)
	}
	defer tab.CloseNow()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, msg, err := tab.Read(rctx); err != nil || !strings.Contains(string(msg), `"kind"`) {
		t.Fatalf("the tab's catch-up: %.200s, %v", msg, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("health, the page and a live tab took %v under the flood; want under 1s", took)
	}
}

// Past the Studio's total, sockets from any address are refused with 1013.
func TestWebsocketTotalLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := studio.Open(ctx, studio.Config{Sockets: handlers.SocketLimits{Total: 3}, Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
		g, err := reviewGraph(b.Checkpointer)
		return map[string]engine.Compiled{"review": g}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Runs().Start(ctx, "review", "busy", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Runs().Wait(ctx, "busy")
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	for i := range 3 {
		rawSocket(t, srv, fmt.Sprintf("127.0.3.%d", i+1), "/threads/busy/ws")
	}
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.3.9")}}).DialContext}}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/threads/busy/ws", &websocket.DialOptions{HTTPClient: other})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusTryAgainLater || !strings.Contains(ce.Reason, "limit 3") {
		t.Fatalf("a socket past the total: %v, want closed with 1013 naming the limit", err)
	}
}
