package cveassessment_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cveassessment"
)

// recorder keeps a run's events; the engine serialises listener calls but
// tests read from their own goroutine.
type recorder struct {
	mu     sync.Mutex
	events []engine.Event
}

func (r *recorder) listen(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// started counts TaskStarted events per node.
func (r *recorder) started() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, e := range r.events {
		if s, ok := e.(engine.TaskStarted); ok {
			n[s.Task.Name]++
		}
	}
	return n
}

func (r *recorder) planned() []engine.StepPlanned {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.StepPlanned
	for _, e := range r.events {
		if p, ok := e.(engine.StepPlanned); ok {
			out = append(out, p)
		}
	}
	return out
}

func vectorPrompts(m *cveassessment.ScriptedModel) []string {
	var out []string
	for _, p := range m.Prompts() {
		if strings.HasPrefix(p, "Write the CVSS v3.1 base vector") {
			out = append(out, p)
		}
	}
	return out
}

type setup struct {
	model *cveassessment.ScriptedModel
	join  *engine.Graph[cveassessment.State]
	plain *engine.Graph[cveassessment.State]
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	s := &setup{model: cveassessment.NewScriptedModel()}
	var err error
	if s.join, err = cveassessment.New(cveassessment.Options{Model: s.model}); err != nil {
		t.Fatalf("New: %v", err)
	}
	if s.plain, err = cveassessment.NewPlainFanIn(cveassessment.Options{Model: s.model}); err != nil {
		t.Fatalf("NewPlainFanIn: %v", err)
	}
	return s
}

func TestAssessmentEndToEnd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id            string
		wantVector    string
		wantScore     float64
		wantSeverity  string
		attackSurface bool // the record lists products
		vendor        bool // the database points at a vendor statement
	}{
		// Published NVD scores.
		{"CVE-2021-44228", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H", 10.0, "Critical", true, false},
		{"CVE-2014-0160", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N", 7.5, "High", true, true},
		// The vendor's higher attack complexity wins over the database's
		// 7.8: FIRST's calculator gives 7.0 for the vendor vector.
		{"CVE-2099-0001", "CVSS:3.1/AV:L/AC:H/PR:N/UI:R/S:U/C:H/I:H/A:H", 7.0, "High", false, true},
		{"CVE-2099-0002", "CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0, "None", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			var rec recorder
			got, err := s.join.Invoke(context.Background(), cveassessment.Input(tc.id), &engine.RunOptions{Listener: rec.listen})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if got.Vector != tc.wantVector || got.Score != tc.wantScore || got.Severity != tc.wantSeverity {
				t.Fatalf("assessment = %s %v %s, want %s %v %s", got.Vector, got.Score, got.Severity, tc.wantVector, tc.wantScore, tc.wantSeverity)
			}
			runs := rec.started()
			for node, n := range runs {
				if n != 1 {
					t.Errorf("node %s ran %d times, want once", node, n)
				}
			}
			if ran := runs[cveassessment.NodeAttackSurface] == 1; ran != tc.attackSurface {
				t.Errorf("generate_attack_surface ran = %v, want %v", ran, tc.attackSurface)
			}
			if (got.AttackSurface != "") != tc.attackSurface {
				t.Errorf("attack surface text = %q, want generated = %v", got.AttackSurface, tc.attackSurface)
			}
			if ran := runs[cveassessment.NodeVendorStatement] == 1; ran != tc.vendor {
				t.Errorf("fetch_vendor_statement ran = %v, want %v", ran, tc.vendor)
			}
			// The vector was generated from the whole evidence.
			prompts := vectorPrompts(s.model)
			if len(prompts) != 1 {
				t.Fatalf("vector generated %d times, want 1", len(prompts))
			}
			if strings.Contains(prompts[0], "not available yet") {
				t.Fatalf("vector prompt was built on partial evidence:\n%s", prompts[0])
			}
		})
	}
}

// Both fetches start at once, in the first superstep after START.
func TestFetchesRunInParallel(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	var rec recorder
	if _, err := s.join.Invoke(context.Background(), cveassessment.Input("CVE-2014-0160"), &engine.RunOptions{Listener: rec.listen}); err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.planned() {
		var names []string
		for _, task := range p.Tasks {
			names = append(names, task.Name)
		}
		if strings.Contains(strings.Join(names, ","), cveassessment.NodeFetchCVE) {
			if !strings.Contains(strings.Join(names, ","), cveassessment.NodeFetchCVSS) {
				t.Fatalf("step %d plans %v: the fetches do not run in the same superstep", p.Step, names)
			}
			return
		}
	}
	t.Fatal("fetch_cve was never planned")
}

// The reason for the join: with plain edges the branch that arrives first
// triggers normalise alone, and the model generates a vector from half the
// evidence before doing it again.
func TestJoinRunsVectorGenerationOncePlainEdgesTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Log4Shell: the CVE branch generates an attack surface (one step
	// longer), the CVSS branch skips the vendor statement (one step
	// shorter), so the branches arrive two supersteps apart.
	joinSetup, plainSetup := newSetup(t), newSetup(t)
	var joinRec, plainRec recorder
	joinOut, err := joinSetup.join.Invoke(ctx, cveassessment.Input("CVE-2021-44228"), &engine.RunOptions{Listener: joinRec.listen})
	if err != nil {
		t.Fatal(err)
	}
	plainOut, err := plainSetup.plain.Invoke(ctx, cveassessment.Input("CVE-2021-44228"), &engine.RunOptions{Listener: plainRec.listen})
	if err != nil {
		t.Fatal(err)
	}

	if n := len(vectorPrompts(joinSetup.model)); n != 1 {
		t.Fatalf("join variant called the model for a vector %d times, want 1", n)
	}
	plainPrompts := vectorPrompts(plainSetup.model)
	if len(plainPrompts) != 2 {
		t.Fatalf("plain variant called the model for a vector %d times, want 2", len(plainPrompts))
	}
	if !strings.Contains(plainPrompts[0], "CVE context: not available yet") {
		t.Fatalf("plain variant's first vector prompt should lack the CVE context:\n%s", plainPrompts[0])
	}
	for _, node := range []string{cveassessment.NodeNormalise, cveassessment.NodeGenerateVector, cveassessment.NodeScore, cveassessment.NodeSeverity} {
		if n := joinRec.started()[node]; n != 1 {
			t.Errorf("join variant ran %s %d times, want 1", node, n)
		}
		if n := plainRec.started()[node]; n != 2 {
			t.Errorf("plain variant ran %s %d times, want 2", node, n)
		}
	}
	// The final answers agree: the damage is the wasted (and, mid-run,
	// wrong) work, which is exactly what makes it easy to miss.
	if joinOut.Vector != plainOut.Vector || joinOut.Score != plainOut.Score {
		t.Fatalf("variants disagree: join %s %v, plain %s %v", joinOut.Vector, joinOut.Score, plainOut.Vector, plainOut.Score)
	}
}

// The topology lint sees the fan-in of unequal lengths in the plain
// variant and names the node to fix; the join variant is clean.
func TestLintFlagsPlainFanIn(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	var found *engine.Warning
	for _, w := range s.plain.Warnings() {
		if w.Node == cveassessment.NodeNormalise {
			found = &w
		}
	}
	if found == nil {
		t.Fatalf("plain variant warnings %v do not name %s", s.plain.Warnings(), cveassessment.NodeNormalise)
	}
	for _, want := range []string{cveassessment.NodeCVEContext, cveassessment.NodeCVSSEvidence, "AddJoin"} {
		if !strings.Contains(found.String(), want) {
			t.Errorf("warning %q does not mention %s", found, want)
		}
	}
	for _, w := range s.join.Warnings() {
		if w.Node == cveassessment.NodeNormalise || w.Node == cveassessment.NodeGenerateVector {
			t.Errorf("join variant has a warning for %s: %s", w.Node, w)
		}
	}
}

func TestBadInputs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, id string
		wantIs   error
		wantMsg  string
	}{
		{"unknown CVE", "CVE-2000-9999", cveassessment.ErrUnknownCVE, `unknown CVE "CVE-2000-9999"`},
		{"not a CVE id", "log4shell", nil, `cve_id "log4shell" is not a CVE id`},
		{"empty", "", nil, `cve_id "" is not a CVE id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			var rec recorder
			_, err := s.join.Invoke(context.Background(), cveassessment.Input(tc.id), &engine.RunOptions{Listener: rec.listen})
			if err == nil {
				t.Fatal("run succeeded, want an error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("error %q does not say %q", err, tc.wantMsg)
			}
			if !engine.IsPermanent(err) {
				t.Fatalf("error %v is not permanent: a retry policy would retry a lookup that cannot succeed", err)
			}
		})
	}
}

// proseModel answers the vector prompt without a vector, as real models
// sometimes do.
type proseModel struct{ cveassessment.ScriptedModel }

func (m *proseModel) Complete(ctx context.Context, prompt string) (string, error) {
	if strings.HasPrefix(prompt, "Write the CVSS") {
		return "This looks serious.", nil
	}
	return m.ScriptedModel.Complete(ctx, prompt)
}

func TestModelWithoutVectorIsAClearError(t *testing.T) {
	t.Parallel()
	g, err := cveassessment.New(cveassessment.Options{Model: &proseModel{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(context.Background(), cveassessment.Input("CVE-2014-0160"), nil)
	if err == nil || !strings.Contains(err.Error(), `reply has no CVSS:3.1 vector: "This looks serious."`) {
		t.Fatalf("error = %v, want one quoting the reply", err)
	}
}

// With a checkpointer (as in the Studio) the state round-trips through
// JSON and reads back typed.
func TestCheckpointedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saver := checkpoints.NewMemory()
	g, err := cveassessment.New(cveassessment.Options{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	cfg := checkpoints.Config{ThreadID: "triage-1"}
	out, err := g.Invoke(ctx, cveassessment.Input("CVE-2014-0160"), &engine.RunOptions{ThreadID: cfg.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Next) != 0 {
		t.Fatalf("finished run has next tasks %v", snap.Next)
	}
	if snap.Values["severity"] != out.Severity || snap.Values["vector"] != out.Vector {
		t.Fatalf("checkpoint holds severity %v vector %v, run returned %s %s", snap.Values["severity"], snap.Values["vector"], out.Severity, out.Vector)
	}
	vendor, ok := snap.Values["vendor_statement"].(cveassessment.VendorStatement)
	if !ok || vendor.Vendor != "OpenSSL" {
		t.Fatalf("vendor_statement in checkpoint = %#v, want the typed OpenSSL statement", snap.Values["vendor_statement"])
	}
}
