package pgtest

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Proxy stands between a test's pool and Postgres and breaks the
// connection on demand, as a database restart or a network fault would:
// Cut resets every open connection, and Refuse makes new ones fail until
// Accept. Tests of fault handling use it instead of stopping the shared
// server under every other test.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	refuse  int // connections still to refuse; -1: all
	accepts int
	refused int
}

// NewProxy starts a proxy to the test database's server; it stops when
// the test ends.
func NewProxy(tb testing.TB) *Proxy {
	tb.Helper()
	cfg := Pool(tb).Config().ConnConfig
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: proxy listen: %v", err)
	}
	p := &Proxy{ln: ln, target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), conns: map[net.Conn]struct{}{}}
	go p.serve()
	tb.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

// Dial connects to the proxy whatever address pgx asks for; it is a
// pgconn.DialFunc.
func (p *Proxy) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", p.ln.Addr().String())
}

// Cut closes every connection through the proxy, at both ends.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a polite close
		}
		c.Close()
	}
	clear(p.conns)
}

// Refuse makes the proxy reset the next n new connections at once (n < 0:
// every one until Accept), as a server that is down.
func (p *Proxy) Refuse(n int) {
	p.mu.Lock()
	p.refuse = n
	p.mu.Unlock()
}

// Accept lets new connections through again.
func (p *Proxy) Accept() {
	p.mu.Lock()
	p.refuse = 0
	p.mu.Unlock()
}

// Counts returns how many connections the proxy let through and how many
// it refused.
func (p *Proxy) Counts() (accepted, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts, p.refused
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse != 0
		if refuse {
			p.refused++
			if p.refuse > 0 {
				p.refuse--
			}
		}
		p.mu.Unlock()
		if refuse {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.accepts++
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
