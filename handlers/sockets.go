package handlers

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// SocketLimits bound the Studio's live websockets, so that tabs (or a
// client) that open sockets and never read cannot take the server's
// memory or its database connections. The zero value gives the defaults.
type SocketLimits struct {
	// PerClient caps the open sockets of one client address (the
	// request's remote IP). Default 64: many tabs, not a flood.
	PerClient int
	// Total caps the open sockets of the whole Studio. Default 1024.
	Total int
	// Catchups caps the catch-ups read from the checkpoints at once; a
	// socket past it waits its turn holding no database connection.
	// Default 4.
	Catchups int
}

// Defaults of SocketLimits.
const (
	DefaultSocketsPerClient = 64
	DefaultSocketsTotal     = 1024
	DefaultCatchups         = 4
)

// sockets counts open websockets per client and in all, and paces the
// catch-ups. One is shared by every thread's websocket route of a Studio.
type sockets struct {
	perClient, total int
	catchups         chan struct{}

	mu       sync.Mutex
	open     int
	byClient map[string]int
}

func newSockets(l SocketLimits) *sockets {
	if l.PerClient <= 0 {
		l.PerClient = DefaultSocketsPerClient
	}
	if l.Total <= 0 {
		l.Total = DefaultSocketsTotal
	}
	if l.Catchups <= 0 {
		l.Catchups = DefaultCatchups
	}
	return &sockets{perClient: l.PerClient, total: l.Total, catchups: make(chan struct{}, l.Catchups), byClient: map[string]int{}}
}

// clientOf is the address sockets are counted by: the remote IP, without
// the port (every tab of a browser has its own).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// take counts a new socket of client, or says why it may not open: the
// reason is the close message the socket gets.
func (s *sockets) take(client string) (release func(), refused string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byClient[client] >= s.perClient:
		return nil, "too many live connections from your address (limit " + strconv.Itoa(s.perClient) + "); close some tabs"
	case s.open >= s.total:
		return nil, "the Studio has too many live connections (limit " + strconv.Itoa(s.total) + "); try again later"
	}
	s.open++
	s.byClient[client]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.open--
			if s.byClient[client]--; s.byClient[client] == 0 {
				delete(s.byClient, client)
			}
		})
	}, ""
}

// catchup runs read (a catch-up that reads checkpoints) when a slot is
// free, or returns ctx's error when the socket goes first.
func (s *sockets) catchup(ctx context.Context, read func() error) error {
	select {
	case s.catchups <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.catchups }()
	return read()
}
