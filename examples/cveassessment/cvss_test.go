package cveassessment

import (
	"errors"
	"strings"
	"testing"
)

// Scores published by FIRST's CVSS v3.1 calculator and NVD for these
// vectors.
func TestBaseScorePublishedVectors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		vector   string
		score    float64
		severity string
	}{
		{"CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", 7.8, "High"},
		{"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8, "Critical"},
		{"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H", 10.0, "Critical"},
		{"CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N", 6.4, "Medium"},
		{"CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0, "None"},
		{"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N", 7.5, "High"},
		{"CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N", 6.1, "Medium"},
		{"CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:U/C:L/I:L/A:N", 5.4, "Medium"},
		{"CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:N/A:N", 5.9, "Medium"},
		{"CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H", 7.8, "High"},
		// Metric order is free; the score is not.
		{"CVSS:3.1/A:H/I:H/C:H/S:U/UI:N/PR:N/AC:L/AV:N", 9.8, "Critical"},
	}
	for _, tc := range cases {
		t.Run(tc.vector, func(t *testing.T) {
			t.Parallel()
			v, err := ParseVector(tc.vector)
			if err != nil {
				t.Fatalf("ParseVector: %v", err)
			}
			if got := v.BaseScore(); got != tc.score {
				t.Fatalf("BaseScore = %v, want %v", got, tc.score)
			}
			if got := Severity(v.BaseScore()); got != tc.severity {
				t.Fatalf("Severity = %q, want %q", got, tc.severity)
			}
		})
	}
}

func TestParseVectorRejectsMalformed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, vector, wantInMessage string
	}{
		{"missing metric", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H", "missing base metric(s) A"},
		{"several missing", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U", "missing base metric(s) C, I, A"},
		{"duplicate", "CVSS:3.1/AV:N/AV:L/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", "metric AV appears twice"},
		{"unknown value", "CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", "AV:X has an unknown value (allowed: N, A, L, P)"},
		{"wrong prefix", "CVSS:3.0/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", `does not start with "CVSS:3.1/"`},
		{"no prefix", "AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", `does not start with "CVSS:3.1/"`},
		{"unknown metric", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H/E:P", `unknown metric "E"`},
		{"not a pair", "CVSS:3.1/AV:N/AC/PR:N/UI:N/S:U/C:H/I:H/A:H", `"AC" is not a metric:value pair`},
		{"trailing slash", "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H/", `"" is not a metric:value pair`},
		{"empty", "", "does not start with"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseVector(tc.vector)
			if !errors.Is(err, ErrMalformedVector) {
				t.Fatalf("ParseVector(%q) error = %v, want ErrMalformedVector", tc.vector, err)
			}
			if !strings.Contains(err.Error(), tc.wantInMessage) {
				t.Fatalf("error %q does not say %q", err, tc.wantInMessage)
			}
		})
	}
}

func TestVectorStringRoundTrips(t *testing.T) {
	t.Parallel()
	in := "CVSS:3.1/A:N/I:L/C:L/S:C/UI:N/PR:L/AC:L/AV:N"
	v, err := ParseVector(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N"
	if v.String() != want {
		t.Fatalf("String = %q, want %q", v.String(), want)
	}
}

// Appendix A of the specification: Roundup must not turn a float artefact
// just above a tenth into the next tenth.
func TestRoundup(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want float64 }{
		{4.02, 4.1},
		{4.00, 4.0},
		{4.000000000000001, 4.0},
		{4.0001, 4.1},
		{0.01, 0.1},
		{10, 10},
	}
	for _, tc := range cases {
		if got := Roundup(tc.in); got != tc.want {
			t.Errorf("Roundup(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSeverityBands(t *testing.T) {
	t.Parallel()
	cases := []struct {
		score float64
		want  string
	}{
		{0, "None"}, {0.1, "Low"}, {3.9, "Low"}, {4.0, "Medium"}, {6.9, "Medium"},
		{7.0, "High"}, {8.9, "High"}, {9.0, "Critical"}, {10, "Critical"},
	}
	for _, tc := range cases {
		if got := Severity(tc.score); got != tc.want {
			t.Errorf("Severity(%v) = %q, want %q", tc.score, got, tc.want)
		}
	}
}
