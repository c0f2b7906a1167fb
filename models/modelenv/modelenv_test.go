package modelenv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/modelenv"
)

const secret = "sk-test-SECRET-do-not-log"

// env is a Getenv over a map, so the branch tests run in parallel.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestLoadPicksTheProvider(t *testing.T) {
	t.Parallel()
	s, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	cases := []struct {
		name     string
		vars     map[string]string
		provider string
		model    string
		key      string // the key the double saw
		api      localprovider.API
	}{
		{"anthropic key", map[string]string{modelenv.EnvAnthropicKey: secret, modelenv.EnvAnthropicBase: ts.URL},
			"anthropic", modelenv.DefaultAnthropicModel, secret, localprovider.Anthropic},
		{"anthropic wins over openai", map[string]string{modelenv.EnvAnthropicKey: secret + "2", modelenv.EnvAnthropicBase: ts.URL,
			modelenv.EnvOpenAIKey: "other", modelenv.EnvModel: "claude-test"},
			"anthropic", "claude-test", secret + "2", localprovider.Anthropic},
		{"openai key", map[string]string{modelenv.EnvOpenAIKey: secret + "3", modelenv.EnvOpenAIBase: ts.URL + "/v1/", modelenv.EnvModel: "gpt-test"},
			"openai", "gpt-test", secret + "3", localprovider.OpenAI},
		{"openai base url alone (Ollama)", map[string]string{modelenv.EnvOpenAIBase: ts.URL + "/v1/", modelenv.EnvModel: "llama3.1"},
			"openai", "llama3.1", modelenv.NoKey, localprovider.OpenAI},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := modelenv.Load(modelenv.Config{Getenv: env(tc.vars)})
			if err != nil {
				t.Fatal(err)
			}
			info := m.Info()
			if info.Provider != tc.provider || info.Model != tc.model || info.Offline {
				t.Fatalf("info = %+v", info)
			}
			// Each case's own key and text, so parallel cases tell their
			// requests apart on the shared double.
			text := "hello from " + tc.name
			s.ScriptKey(tc.key, localprovider.Turn{Text: "hi: " + tc.name})
			reply, err := m.Generate(t.Context(), []models.Message{models.Human(text)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text() != "hi: "+tc.name {
				t.Fatalf("reply %q", reply.Text())
			}
			var seen bool
			for _, r := range s.Requests() {
				if r.Key == localprovider.Fingerprint(tc.key) && strings.Contains(string(r.Body), text) {
					seen = r.API == tc.api && strings.Contains(string(r.Body), `"`+tc.model+`"`)
				}
			}
			if !seen {
				t.Fatalf("the double saw no %s request for %s with key %s", tc.api, tc.model, tc.key)
			}
			if d := modelenv.Describe(m); d != tc.provider+" "+tc.model {
				t.Fatalf("Describe = %q", d)
			}
		})
	}
}

func TestLoadWithABaseURLNeedsAModelName(t *testing.T) {
	t.Parallel()
	_, err := modelenv.Load(modelenv.Config{Getenv: env(map[string]string{modelenv.EnvOpenAIBase: "http://127.0.0.1:11434/v1/"})})
	if !errors.Is(err, modelenv.ErrNoModel) || !strings.Contains(err.Error(), modelenv.EnvModel) {
		t.Fatalf("err = %v", err)
	}
}

func TestProviderErrorsHoldNoKey(t *testing.T) {
	t.Parallel()
	s, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	s.Script(localprovider.Turn{Fault: &localprovider.Fault{Status: 500, Message: "boom " + secret}})
	m, err := modelenv.Load(modelenv.Config{Getenv: env(map[string]string{modelenv.EnvAnthropicKey: secret, modelenv.EnvAnthropicBase: ts.URL})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil)
	var pe *models.ProviderError
	if !errors.As(err, &pe) || pe.Status != 500 {
		t.Fatalf("err = %v", err)
	}
	if got := fmt.Sprintf("%v %+v %s", err, pe, modelenv.Describe(m)); strings.Contains(got, secret) {
		t.Fatalf("the key leaked: %s", got)
	}
}

func TestOfflineWithoutKeys(t *testing.T) {
	t.Parallel()
	m, err := modelenv.Load(modelenv.Config{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if info := m.Info(); !info.Offline || info.Provider != modelenv.OfflineProvider || info.Model != modelenv.OfflineModel {
		t.Fatalf("info = %+v", info)
	}
	if d := modelenv.Describe(m); !strings.Contains(d, "offline") || !strings.Contains(d, modelenv.EnvAnthropicKey) {
		t.Fatalf("Describe = %q", d)
	}
	var chunks []string
	reply, err := m.Stream(t.Context(), []models.Message{models.Human("three short words")}, nil, func(c models.Message) error {
		if c.Text() != "" {
			chunks = append(chunks, c.Text())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reply.Text(), localprovider.OfflineLabel) || len(chunks) < 5 || strings.Join(chunks, "") != reply.Text() {
		t.Fatalf("reply %q from chunks %q", reply.Text(), chunks)
	}
	// models.Call marks an offline model's reply.
	reply, err = models.Call(t.Context(), m, []models.Message{models.Human("hi")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := reply.ResponseMetadata["offline"].(bool); !off {
		t.Fatalf("response_metadata = %v", reply.ResponseMetadata)
	}
}

// TestFromEnvReadsTheProcessEnvironment sets the process environment,
// which t.Setenv allows only in a test that does not run in parallel.
func TestFromEnvReadsTheProcessEnvironment(t *testing.T) {
	s, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	for _, k := range []string{modelenv.EnvAnthropicKey, modelenv.EnvAnthropicBase, modelenv.EnvOpenAIKey, modelenv.EnvOpenAIBase, modelenv.EnvModel} {
		t.Setenv(k, "")
	}
	m, err := modelenv.FromEnv()
	if err != nil || !m.Info().Offline {
		t.Fatalf("no keys: %+v, %v", m, err)
	}
	t.Setenv(modelenv.EnvOpenAIKey, secret)
	t.Setenv(modelenv.EnvOpenAIBase, ts.URL+"/v1/")
	t.Setenv(modelenv.EnvModel, "gpt-env")
	if m, err = modelenv.FromEnv(); err != nil || m.Info().Provider != "openai" || m.Info().Model != "gpt-env" {
		t.Fatalf("openai: %+v, %v", m, err)
	}
	t.Setenv(modelenv.EnvAnthropicKey, secret)
	t.Setenv(modelenv.EnvAnthropicBase, ts.URL)
	t.Setenv(modelenv.EnvModel, "")
	if m, err = modelenv.FromEnv(); err != nil || m.Info().Provider != "anthropic" || m.Info().Model != modelenv.DefaultAnthropicModel {
		t.Fatalf("anthropic: %+v, %v", m, err)
	}
	if _, err := m.Generate(t.Context(), []models.Message{models.Human("hi")}, nil); err != nil {
		t.Fatal(err)
	}
	if r := s.Requests(); len(r) != 1 || r[0].API != localprovider.Anthropic || r[0].Key != localprovider.Fingerprint(secret) {
		t.Fatalf("requests %+v", r)
	}
}

// respondWith is an offline responder that answers every request with t.
func respondWith(t localprovider.Turn) func(localprovider.Request) (localprovider.Turn, bool) {
	return func(localprovider.Request) (localprovider.Turn, bool) { return t, true }
}

func TestOfflineRespondDrivesTheDouble(t *testing.T) {
	t.Parallel()
	m, err := modelenv.Offline(respondWith(localprovider.Turn{Chunks: []string{"a ", "b"}, ToolCalls: []localprovider.ToolCall{{Name: "lookup", Args: `{"q":"x"}`}}}))
	if err != nil {
		t.Fatal(err)
	}
	tool := models.ToolSpec{Name: "lookup", Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}
	reply, err := m.Stream(t.Context(), []models.Message{models.Human("go")}, &models.CallOptions{Tools: []models.ToolSpec{tool}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text() != "a b" || len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Args["q"] != "x" {
		t.Fatalf("reply = %+v", reply)
	}
}

// The in-process transport behaves as a connection would: a dropped
// connection and a mid-stream error are errors, a cancelled call stops
// a slow first byte.
func TestOfflineTransportFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fault  localprovider.Fault
		stream bool
		check  func(error) bool
	}{
		{"dropped before the answer", localprovider.Fault{Midstream: localprovider.DropConnection}, false,
			func(err error) bool { return err != nil }},
		{"dropped mid-stream", localprovider.Fault{Midstream: localprovider.DropConnection, AfterDeltas: 1}, true,
			func(err error) bool { return err != nil }},
		{"error event mid-stream", localprovider.Fault{Midstream: localprovider.ErrorEvent, AfterDeltas: 1}, true,
			func(err error) bool {
				var pe *models.ProviderError
				return errors.As(err, &pe) && pe.Midstream && pe.Status == 529
			}},
		{"429", localprovider.Fault{Status: 429, RetryAfterMs: "20"}, false,
			func(err error) bool {
				var pe *models.ProviderError
				return errors.As(err, &pe) && pe.Status == 429 && pe.RetryAfter() == 20*time.Millisecond
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := modelenv.Offline(respondWith(localprovider.Turn{Chunks: []string{"one ", "two ", "three"}, Fault: &tc.fault}))
			if err != nil {
				t.Fatal(err)
			}
			msgs := []models.Message{models.Human("hi")}
			if tc.stream {
				_, err = m.Stream(t.Context(), msgs, nil, nil)
			} else {
				_, err = m.Generate(t.Context(), msgs, nil)
			}
			if !tc.check(err) {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

func TestOfflineCancelStopsASlowFirstByte(t *testing.T) {
	t.Parallel()
	m, err := modelenv.Offline(respondWith(localprovider.Turn{Text: "late", Fault: &localprovider.Fault{FirstByteDelay: time.Hour}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := m.Stream(ctx, []models.Message{models.Human("hi")}, nil, nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// Two offline models (a Studio before and after a restart) never give
// the same message or tool call id, though each double counts from 1.
func TestOfflineIDsDifferBetweenModels(t *testing.T) {
	t.Parallel()
	turn := localprovider.Turn{Text: "calling", ToolCalls: []localprovider.ToolCall{{Name: "lookup", Args: `{}`}}}
	tool := models.ToolSpec{Name: "lookup", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}
	var ids []string
	for range 2 {
		m, err := modelenv.Offline(respondWith(turn))
		if err != nil {
			t.Fatal(err)
		}
		var chunkIDs []string
		reply, err := m.Stream(t.Context(), []models.Message{models.Human("go")}, &models.CallOptions{Tools: []models.ToolSpec{tool}}, func(c models.Message) error {
			chunkIDs = append(chunkIDs, c.ID)
			for _, tc := range c.ToolCallChunks {
				if tc.ID != "" && !strings.HasPrefix(tc.ID, "toolu_local_") {
					t.Errorf("tool call chunk id %q", tc.ID)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.ToolCalls) != 1 || chunkIDs[0] != reply.ID {
			t.Fatalf("reply %+v, chunk ids %v", reply, chunkIDs)
		}
		ids = append(ids, reply.ID, reply.ToolCalls[0].ID)
	}
	if ids[0] == ids[2] || ids[1] == ids[3] {
		t.Fatalf("ids repeat across models: %v", ids)
	}
}

// Config.Hooks are installed on the model Load picks (here the offline
// one), and Config.Double configures its double.
func TestLoadInstallsHooks(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	m, err := modelenv.Load(modelenv.Config{
		Getenv: func(string) string { return "" },
		Hooks:  models.Hooks{BeforeCall: func(context.Context, *models.Request) error { calls.Add(1); return nil }},
		Double: localprovider.Config{Respond: respondWith(localprovider.Turn{Text: "scripted by Double"})},
	})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := m.Generate(context.Background(), []models.Message{models.Human("hi")}, nil)
	if err != nil || calls.Load() != 1 || !strings.Contains(reply.Text(), "scripted by Double") {
		t.Fatalf("reply %q, %v; hook ran %d times", reply.Text(), err, calls.Load())
	}
}
