// Package researchsubgraph is an engineering team's research assistant.
// A quick factual question ("Which port does Postgres listen on?") gets an
// answer at once; a question that weighs options ("Compare Postgres and
// SQLite for a multi-user web app") goes to a research subgraph that plans
// searches, runs them over the team's document library, lets a person
// check the findings, and writes an answer that cites its sources.
//
// # The graphs
//
//	START ─ classify ─┬─(quick)──── quick_answer ─ END
//	                  └─(research)─ research ───── END
//
//	research (a compiled subgraph added with AddSubgraph):
//
//	START ─ plan ─ search ─ review ─(good)─ summarise ─ END
//	                 └──(more)──┘
//
// # What it demonstrates
//
//   - A router (a conditional edge on the classifier's answer) in front of
//     a nested subgraph node. The subgraph has its own state type
//     (ResearchState); only the keys it shares with the parent (question,
//     answer, sources) cross the boundary, so the plan and the findings
//     stay inside.
//   - An interrupt inside the subgraph stops the whole run: the parent's
//     Invoke returns *engine.Interrupted with the review's payload, its
//     Node ("review") and the subgraph's Namespace ("research:<task id>").
//     Resuming the parent, with a value or by interrupt id, reaches the
//     review node, and the subgraph continues where it stopped.
//   - The subgraph checkpoints into the parent's checkpointer under its
//     own namespace: GetStateWith(…, engine.StateOptions{Subgraphs: true})
//     shows the parent waiting on research and, inside, the subgraph
//     waiting on review with its findings.
//   - Replaying the parent from the interrupted checkpoint keeps the
//     subgraph's work: plan and search do not run again, and the review
//     asks again on the new branch.
//   - A reviewer may answer with a follow-up search instead of yes; the
//     subgraph loops back to search and asks again with more findings.
//
// The model sits behind Model (ScriptedModel answers by rule; an
// OpenAI-compatible chat client satisfies the same interface) and search
// behind Searcher (Library, a fixed list of notes).
package researchsubgraph
