// Package modelenv picks a chat model from the environment, the way the
// providers' own tools do, so a program (the Studio, an example) runs on
// a real provider when a key is set and on the offline model otherwise:
//
//	m, err := modelenv.FromEnv()
//	log.Printf("model: %s", modelenv.Describe(m)) // never the key
//
// # The choice
//
//   - ANTHROPIC_API_KEY set: models/anthropic, at ANTHROPIC_BASE_URL when
//     that is set.
//   - Else OPENAI_API_KEY or OPENAI_BASE_URL set: models/openai, at
//     OPENAI_BASE_URL when set. A base URL alone is a server without keys
//     (Ollama, vLLM): the SDK is given NoKey, and SUPERSTEP_MODEL must
//     name a model it serves (ErrNoModel otherwise).
//   - Else the offline model (Offline).
//
// The model's name is SUPERSTEP_MODEL, else DefaultAnthropicModel or
// DefaultOpenAIModel. Load does the same with a Getenv of its own (tests,
// a program's own configuration) and a responder for the offline model.
// Keys go to the provider's Config and nowhere else: errors, Describe
// and the models' Info name variables, never their values.
//
// # The offline model
//
// Offline is the local provider double (models/localprovider) behind the
// Anthropic adapter, served in process: an http.RoundTripper hands each
// request to the double's handler directly (no socket, no port), and
// streams its answer through a pipe, so tokens arrive one by one as over
// a connection; the double's faults (a dropped connection, a mid-stream
// error, a slow first byte that a cancelled call abandons) behave as
// they would over HTTP. Its Info is Provider "local", Model "offline",
// Offline true, so models.Call marks each reply (response_metadata
// "offline": true) and the Studio's chat view badges it. The double
// numbers its message and tool call ids from 1 in every process, so the
// offline model puts a random nonce of its own into them
// (msg_local_<nonce>_000001): a thread continued after a restart keeps
// distinct ids.
//
// The double's own offline answers call one tool named in the last user
// message and then report its result. A graph whose tool loop needs more
// gives Config.Respond (localprovider.Config.Respond): it answers the
// requests it recognises and leaves the rest to the default answers.
// examples/cveagent's Respond drives its CVE assessment this way.
package modelenv
