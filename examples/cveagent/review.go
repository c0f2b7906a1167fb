package cveagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/transferapproval"
)

// Actions a reviewer may answer with.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionEdit    = "edit"
)

// Severities are the CVSS v3.1 severity bands, as cveassessment.Severity
// names them: the values an edit may choose.
var Severities = []any{"None", "Low", "Medium", "High", "Critical"}

// Question is the review's interrupt payload: what to decide, the
// assessment to decide on, and the schema of the accepted answers, which
// the Studio's approval panel renders as a form.
type Question struct {
	Question string  `json:"question"`
	CVEID    string  `json:"cve_id"`
	Vector   string  `json:"vector"`
	Score    float64 `json:"score"`
	Severity string  `json:"severity"`
	Summary  string  `json:"summary"`
	// Problem says why the previous answer was refused, and Errors which
	// field was wrong (the Studio's answer-errors convention); empty on
	// the first ask.
	Problem string                   `json:"problem,omitempty"`
	Errors  map[string]string        `json:"errors,omitempty"`
	Schema  *transferapproval.Schema `json:"schema"`
}

// Answer is a reviewer's decision. Resume with an Answer, the same JSON
// object ({"action": "edit", "severity": "High"}), "approve" / "reject",
// or true / false (the Studio's Approve and Reject buttons).
type Answer struct {
	Action string `json:"action"`
	// Severity is the severity to publish, for an edit.
	Severity string `json:"severity,omitempty"`
	// Reason is the reviewer's reason, kept with the decision.
	Reason string `json:"reason,omitempty"`
}

// AnswerSchema describes the answers the review accepts. It is
// transferapproval's schema type, which the Studio's approval form reads
// and which checks an answer with the same rules.
func AnswerSchema() *transferapproval.Schema {
	maxReason, closed := 500, false
	return &transferapproval.Schema{
		Type:  "object",
		Title: "Publish this assessment?",
		Properties: map[string]*transferapproval.Schema{
			"action": {Type: "string", Enum: []any{ActionApprove, ActionReject, ActionEdit},
				Description: "approve publishes it as it is; reject does not publish it; edit publishes it with another severity"},
			"severity": {Type: "string", Enum: Severities, Description: "the severity to publish, for edit"},
			"reason":   {Type: "string", MaxLength: &maxReason, Description: "why (kept with the decision)"},
		},
		Required:             []string{"action"},
		AdditionalProperties: &closed,
		If:                   &transferapproval.Schema{Properties: map[string]*transferapproval.Schema{"action": {Const: ActionEdit}}},
		Then:                 &transferapproval.Schema{Required: []string{"severity"}},
	}
}

// ParseAnswer reads a resume value as an Answer checked against schema.
func ParseAnswer(schema *transferapproval.Schema, v any) (Answer, error) {
	switch x := v.(type) {
	case bool:
		v = map[string]any{"action": map[bool]string{true: ActionApprove, false: ActionReject}[x]}
	case string:
		s := strings.TrimSpace(x)
		if strings.HasPrefix(s, "{") {
			var m any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				return Answer{}, fmt.Errorf("%w: not valid JSON: %v", transferapproval.ErrInvalidAnswer, err)
			}
			v = m
		} else {
			v = map[string]any{"action": strings.ToLower(s)}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %T cannot be read as JSON: %v", transferapproval.ErrInvalidAnswer, v, err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", transferapproval.ErrInvalidAnswer, err)
	}
	if err := schema.Validate(doc); err != nil {
		return Answer{}, err
	}
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", transferapproval.ErrInvalidAnswer, err)
	}
	return a, nil
}

// review asks a person about an assessment above ApprovalAbove. Its loop
// is replayed on every resume: Interrupt returns the answers already
// given in order, so a refused answer simply leads to the next question.
func review(ctx context.Context, s State) (engine.Output, error) {
	schema := AnswerSchema()
	var problem string
	var errs map[string]string
	for {
		raw, err := engine.Interrupt(ctx, Question{
			Question: fmt.Sprintf("Publish %s as %s (%.1f)? Scores above %.1f are published only after a review.", s.CVEID, s.Severity, s.Score, ApprovalAbove),
			CVEID:    s.CVEID, Vector: s.Vector, Score: s.Score, Severity: s.Severity, Summary: s.Summary,
			Problem: problem, Errors: errs, Schema: schema,
		})
		if err != nil {
			return nil, err
		}
		a, err := ParseAnswer(schema, raw)
		if err != nil {
			problem, errs = transferapproval.Refusal(err)
			continue
		}
		switch a.Action {
		case ActionReject:
			return engine.Command{Update: engine.Update{"decision": DecisionRejected, "reason": a.Reason}, Goto: []any{engine.End}}, nil
		case ActionEdit:
			return engine.Command{Update: engine.Update{"decision": DecisionEdited, "severity": a.Severity, "reason": a.Reason}, Goto: []any{NodePublish}}, nil
		}
		return engine.Command{Update: engine.Update{"decision": DecisionApproved, "reason": a.Reason}, Goto: []any{NodePublish}}, nil
	}
}
