package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/superstep-dev/superstep/handlers"
)

// MaxBodyBytes caps an API request body. State updates and run inputs
// carry whole conversations, so the cap is well above the pages' form
// limit.
const MaxBodyBytes = 16 << 20

// apiError is an error with the status the API answers it with.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

// Status constructors. invalid names the field that is wrong.
func invalid(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &apiError{http.StatusUnprocessableEntity, msg}
}

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &apiError{http.StatusConflict, fmt.Sprintf(format, args...)}
}

// writeJSON answers v as JSON with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Values come from checkpoints, which only hold JSON; this is a
		// bug, and says so without details.
		b, code = []byte(`{"detail":"the response could not be encoded"}`), http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// fail answers err: its own status for an apiError, the status the run
// manager's and store's errors map to otherwise (see handlers.StatusOf),
// always as {"detail": ...}. Server-side failures are logged and
// described without internals.
func fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, msg := http.StatusInternalServerError, err.Error()
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		code = ae.code
	default:
		code = handlers.StatusOf(err)
		if code == http.StatusBadRequest {
			// FastAPI's status for a request that does not validate; the
			// SDK does not retry it.
			code = http.StatusUnprocessableEntity
		}
	}
	if code == http.StatusRequestEntityTooLarge {
		msg = fmt.Sprintf("the request body is larger than %d MiB", MaxBodyBytes>>20)
	}
	if code >= 500 {
		log.Error("api request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
		msg = "the server failed to answer; its log says why"
	}
	writeJSON(w, code, map[string]string{"detail": msg})
}

// decodeBody reads the request's JSON body into v. JSON is accepted as
// application/json, as text/plain (LangGraph Studio sends it so, to
// avoid a CORS preflight) or without a content type; an empty body
// decodes as {} when allowEmpty. The body is checked as the pages check
// JSON (depth, duplicate keys, trailing data) before it is decoded, so a
// mistyped key is never silently dropped in favour of its twin.
func decodeBody(r *http.Request, v any, allowEmpty bool) error {
	_, err := decodeBodyRaw(r, v, allowEmpty)
	return err
}

// decodeBodyRaw is decodeBody that also returns the body's bytes.
func decodeBodyRaw(r *http.Request, v any, allowEmpty bool) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && mt != "text/plain" && !strings.HasSuffix(mt, "+json")) {
			return nil, &apiError{http.StatusUnsupportedMediaType, fmt.Sprintf("body: send JSON (Content-Type application/json), not %q", ct)}
		}
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{http.StatusRequestEntityTooLarge, ""}
		}
		return nil, invalid("body", "could not be read: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if !allowEmpty {
			return nil, invalid("body", "empty; send a JSON object")
		}
		b = []byte("{}")
	}
	if _, err := handlers.DecodeJSON(string(b)); err != nil {
		return nil, invalid("body", "%v", strings.TrimPrefix(err.Error(), handlers.ErrBadJSON.Error()+": "))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return nil, invalid(fieldOf(err), "%s", describeDecodeError(err))
	}
	return b, nil
}

// fieldOf names the field a decoding error is about ("body" when it is the
// whole body).
func fieldOf(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	return "body"
}

func describeDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	}
	return goKind
}

// publicMessage is what a client may read of err where it goes into a
// 200 body or an event (a run's wait, stream or batch item): its own
// text when it says what the request got wrong, and otherwise a generic
// line, the error itself going to the log: a server failure's text can
// name hosts and databases.
func publicMessage(log *slog.Logger, err error) string {
	var ae *apiError
	if errors.As(err, &ae) || handlers.StatusOf(err) < 500 {
		return err.Error()
	}
	log.Error("api: run failed on the server", slog.Any("error", err))
	return "the server failed; its log says why"
}
