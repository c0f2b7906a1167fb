// Package transferapproval is the payments desk of a small business bank.
// Customers ask for transfers in their own words ("Please send 1,500 to
// Alice Martin for the March invoice"); small ones go straight out, while
// anything over the limit (1000 by default) waits for an employee who can
// approve it, reject it, or lower the amount.
//
// # The graph
//
//	START ─ extract ─ risk_check ─┬─ execute ─ END
//	                              └─ reject ── END
//
// extract has a language model read the amount and the recipient from
// the request. risk_check routes with a Command (its destinations are
// declared with engine.Destinations, so the Studio draws both edges): an
// amount within the limit goes to execute at once; a larger one stops the
// run with engine.Interrupt until a person answers.
//
// # What it demonstrates
//
//   - Human in the loop: the interrupt payload is a Question whose Schema
//     (a small JSON Schema) describes the accepted answers: approve,
//     reject with an optional reason, or edit with a new amount above
//     zero. The Studio's approval panel can render a typed form from it;
//     the thread resumes with engine.Command{Resume: answer}, or with a
//     map from the interrupt's id to the answer.
//   - The node validates the answer against the same schema. A wrong
//     answer does not crash the run: the node asks again, with the reason
//     in Question.Problem ("invalid answer: action: must be one of ...").
//     Question.Errors carries the same reason keyed by the answer field
//     it concerns ({"amount": "2000.00 is still over the 1000.00 limit…"}),
//     the convention the Studio's approval form reads to show a reason
//     next to its field.
//     An edited amount goes through the limit again, so lowering 5000 to
//     2000 asks again while lowering it to 800 pays 800.
//   - How a node with several questions resumes: it re-runs from the top
//     and each engine.Interrupt call returns, in order, the answer given
//     to it, so the asking loop is written as plain Go.
//   - With a checkpointer, GetState shows the pending interrupt with its
//     payload, which is what an approval screen renders.
//
// The model sits behind Model; ScriptedModel reads the request with
// regular expressions, and an OpenAI-compatible chat client satisfies the
// same interface. Payments go to a Ledger that records them.
package transferapproval
