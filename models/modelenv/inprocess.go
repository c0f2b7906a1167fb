package modelenv

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// inProcess is an http.RoundTripper that serves each request with a
// handler in the same process: no socket, no port, nothing listening.
// The response is returned as soon as the handler writes its header, and
// its body is a pipe the handler writes into, so a streamed reply arrives
// event by event, as over a connection. A handler that aborts
// (panic(http.ErrAbortHandler), the double's dropped connection) ends the
// body with io.ErrUnexpectedEOF, or fails the round trip when it had sent
// nothing; a cancelled request context ends both.
type inProcess struct{ handler http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	in := req.Clone(ctx)
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "in-process"
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, started: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				// As net/http's server does, a panic ends the exchange
				// (it would be a bug in the double: say so).
				err := io.ErrUnexpectedEOF
				if !errors.Is(asError(p), http.ErrAbortHandler) {
					err = fmt.Errorf("modelenv: the offline model's handler panicked: %v", p)
				}
				w.abort()
				pw.CloseWithError(err)
				return
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
			_ = pw.Close()
		}()
		t.handler.ServeHTTP(w, in)
	}()
	go func() {
		// A cancelled request ends the body (the handler's writes then
		// fail) as closing a connection would.
		select {
		case <-ctx.Done():
			pr.CloseWithError(ctx.Err())
		case <-done:
		}
	}()
	select {
	case <-w.started:
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	if w.aborted {
		_, err := pr.Read(make([]byte, 1)) // the handler's reason
		return nil, err
	}
	return &http.Response{
		Status:        http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          pr,
		ContentLength: -1,
		Request:       req,
	}, nil
}

// pipeResponse is the handler's http.ResponseWriter.
type pipeResponse struct {
	header http.Header
	body   *io.PipeWriter

	once    sync.Once
	started chan struct{} // closed once the header is sent (or the handler aborted)
	status  int
	sent    http.Header // the header as it was when sent
	aborted bool
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) WriteHeader(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.started)
	})
}

func (w *pipeResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush does nothing: the pipe hands every write to the reader as it is
// made.
func (w *pipeResponse) Flush() {}

// abort marks a handler that gave up before sending a header.
func (w *pipeResponse) abort() {
	w.once.Do(func() {
		w.aborted = true
		close(w.started)
	})
}

func asError(p any) error {
	if err, ok := p.(error); ok {
		return err
	}
	return nil
}
