// Package cveagent is the CVE risk assessment (examples/cveassessment)
// rebuilt as a ReAct agent: a language model decides which facts to
// fetch and which vector to score, with cveassessment's Fetcher and CVSS
// v3.1 calculator as its tools, and a person approves a severity above
// 9.0 before it is published.
//
// # The graph
//
//	START ─ ask ─ analyst ─ assess ─┬─(score > 9.0)─ review ─┬─(approve, edit)─ publish ─ END
//	                                │                         └─(reject)──────────────────── END
//	                                └─(score ≤ 9.0)─────────────────────────── publish ─ END
//
// The nodes:
//
//   - ask turns the input ({"cve_id": "CVE-2021-44228"}) into the user's
//     message.
//   - analyst is agents.NewReactAgent as a subgraph (its own checkpoint
//     namespace; "messages" is the key it shares): the model node "agent"
//     and the ToolNode "tools" in a loop until the model stops calling
//     tools. Its system prompt is Prompt.
//   - assess reads the assessment from the agent's last successful
//     score_cvss result and scores the vector again with the calculator,
//     so the published score is the specification's, whatever the model
//     wrote; no such result is ErrNotScored, with the agent's last reply.
//   - review (only above ApprovalAbove, 9.0) is engine.Interrupt with a
//     Question carrying a JSON schema (AnswerSchema): approve, reject, or
//     edit the severity, with a reason. The Studio's approval panel
//     renders it as a form; its Approve and Reject buttons (true, false)
//     and the strings "approve" and "reject" work too. A refused answer
//     is asked again with the reason next to its field.
//   - publish writes Published (and the decision); a rejection ends the
//     run without it.
//
// # The tools
//
// Tools builds them over a cveassessment.Fetcher (Fixtures by default):
// fetch_cve(cve_id) and fetch_cvss(cve_id) return the records as JSON,
// fetch_vendor_statement(vendor, cve_id) a vendor's own vector, and
// score_cvss(vector) the calculator's base score and severity (Score). A
// tool's failure (an unknown CVE, a malformed vector) goes back to the
// model as an error ToolMessage (agents.HandleAllErrors), so it can
// correct itself.
//
// # Offline and on a real provider
//
// Options.Model is the agent's model. Without one, New uses the offline
// model (modelenv.Offline) with Respond, a deterministic responder for
// this conversation: fetch the record and CVSS data (two parallel tool
// calls), the vendor's statement when there is one, score the preferred
// vector, then summarise, each text labelled as the offline model's and
// streamed word by word. The double's default offline answers call one
// tool and report, which cannot drive this loop. The Studio builds the
// model with modelenv.Load(modelenv.Config{Respond: cveagent.Respond}):
// a real provider when ANTHROPIC_API_KEY or OPENAI_API_KEY (or
// OPENAI_BASE_URL) is set, the offline model otherwise.
//
// On a real model the loop is the model's own: it may call the tools in
// another order or call them again, and its summary is its own words,
// but the published score is always the calculator's.
//
// The agent's tokens stream to the "messages" mode from inside the
// subgraph: Stream with RunOptions.Subgraphs set shows them, under the
// "analyst:<task id>" namespace.
package cveagent
