// Package cveassessment is a CVE risk-assessment agent, the kind a product
// security team runs on every advisory that reaches its queue: given a CVE
// id it gathers what is known, has a language model propose a CVSS v3.1
// vector from the evidence, scores the vector and rates its severity.
//
// # The graph
//
//	START ─┬─ fetch_cve ─ classify_weakness ─┬─(generate)─ generate_attack_surface ─┐
//	       │                                 └─(skip)──────────────────────────────┴─ build_cve_context ──┐
//	       │                                                                                               ├─ join ─ normalise ─ generate_vector ─ compute_score ─ rate_severity ─ END
//	       └─ fetch_cvss ─┬─(fetch)─ fetch_vendor_statement ─┐                                              │
//	                      └─(skip)───────────────────────────┴─ build_cvss_evidence ───────────────────────┘
//
// The CVE record and the CVSS data are fetched in parallel (one superstep).
// Each branch then has an optional step chosen by a conditional edge: an
// attack-surface description is generated only when the record names
// affected products, and a vendor's own CVSS statement is fetched only when
// the database points at one. The branches therefore arrive after two,
// three or four supersteps, and a synchronisation barrier (New uses
// StateGraph.AddJoin) makes normalise wait for both.
//
// # What it demonstrates
//
// NewPlainFanIn builds the same graph with two plain edges into normalise.
// That is the classic "node runs twice" surprise of Pregel semantics: each
// arrival triggers normalise on its own, so normalise, the model call that
// generates the vector, the scoring and the rating all run twice, the first
// time on half the evidence. The final answer is the same, which is why the
// mistake goes unnoticed until the model bill arrives. The topology lint
// reports the plain variant at compile time (Graph.Warnings names
// normalise and suggests the join); the Studio shows the warning and, when
// the run executes, the doubled tasks.
//
// The CVSS calculator (ParseVector, Vector.BaseScore, Roundup, Severity)
// implements the v3.1 specification's base-score formulas, including its
// Roundup definition and the scope-dependent privilege weights, and
// rejects malformed vectors with errors that say what is wrong.
//
// Data comes through a Fetcher (Fixtures: condensed local records, no
// network) and prose through a Model (ScriptedModel: deterministic rules).
// A real NVD client and an OpenAI-compatible chat client satisfy the same
// interfaces.
package cveassessment
