package cveassessment

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrMalformedVector is returned (wrapped, with the reason) for a CVSS
// vector string that does not follow the v3.1 specification.
var ErrMalformedVector = errors.New("malformed CVSS v3.1 vector")

// vectorPrefix is the version label every v3.1 vector string starts with.
const vectorPrefix = "CVSS:3.1/"

// Vector holds the eight base metrics of a CVSS v3.1 vector, each as its
// one-letter value (for example AV "N", S "U", C "H").
type Vector struct {
	AV, AC, PR, UI, S, C, I, A string
}

// baseMetrics lists the base metrics in the specification's order with
// their allowed values, so parsing and String agree on both.
var baseMetrics = []struct {
	name   string
	values string
}{
	{"AV", "NALP"}, {"AC", "LH"}, {"PR", "NLH"}, {"UI", "NR"},
	{"S", "UC"}, {"C", "HLN"}, {"I", "HLN"}, {"A", "HLN"},
}

func (v *Vector) field(name string) *string {
	switch name {
	case "AV":
		return &v.AV
	case "AC":
		return &v.AC
	case "PR":
		return &v.PR
	case "UI":
		return &v.UI
	case "S":
		return &v.S
	case "C":
		return &v.C
	case "I":
		return &v.I
	case "A":
		return &v.A
	}
	return nil
}

// ParseVector parses a CVSS v3.1 base vector such as
// "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H". Metrics may come in any
// order, but each of the eight must appear exactly once. Temporal and
// environmental metrics are rejected: this calculator computes base scores
// only, and silently ignoring them would report a score the vector's author
// did not mean.
func ParseVector(s string) (Vector, error) {
	var v Vector
	rest, ok := strings.CutPrefix(s, vectorPrefix)
	if !ok {
		return v, fmt.Errorf("%w: %q does not start with %q", ErrMalformedVector, s, vectorPrefix)
	}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(rest, "/") {
		name, value, ok := strings.Cut(part, ":")
		if !ok || name == "" || value == "" {
			return v, fmt.Errorf("%w: %q is not a metric:value pair", ErrMalformedVector, part)
		}
		f := v.field(name)
		if f == nil {
			return v, fmt.Errorf("%w: unknown metric %q (only the base metrics AV, AC, PR, UI, S, C, I, A are accepted)", ErrMalformedVector, name)
		}
		if seen[name] {
			return v, fmt.Errorf("%w: metric %s appears twice", ErrMalformedVector, name)
		}
		seen[name] = true
		allowed := allowedValues(name)
		if len(value) != 1 || !strings.Contains(allowed, value) {
			return v, fmt.Errorf("%w: %s:%s has an unknown value (allowed: %s)", ErrMalformedVector, name, value, strings.Join(strings.Split(allowed, ""), ", "))
		}
		*f = value
	}
	var missing []string
	for _, m := range baseMetrics {
		if !seen[m.name] {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return v, fmt.Errorf("%w: missing base metric(s) %s", ErrMalformedVector, strings.Join(missing, ", "))
	}
	return v, nil
}

func allowedValues(name string) string {
	for _, m := range baseMetrics {
		if m.name == name {
			return m.values
		}
	}
	return ""
}

// String formats the vector in the specification's metric order.
func (v Vector) String() string {
	var b strings.Builder
	b.WriteString(vectorPrefix)
	for i, m := range baseMetrics {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(m.name + ":" + *v.field(m.name))
	}
	return b.String()
}

// Metric weights from the CVSS v3.1 specification, section 7.4.
var (
	weightAV  = map[string]float64{"N": 0.85, "A": 0.62, "L": 0.55, "P": 0.2}
	weightAC  = map[string]float64{"L": 0.77, "H": 0.44}
	weightUI  = map[string]float64{"N": 0.85, "R": 0.62}
	weightCIA = map[string]float64{"H": 0.56, "L": 0.22, "N": 0}
)

// weightPR depends on scope: privileges matter more when the attack
// crosses into another security authority.
func weightPR(pr string, scopeChanged bool) float64 {
	switch pr {
	case "N":
		return 0.85
	case "L":
		if scopeChanged {
			return 0.68
		}
		return 0.62
	default: // "H"
		if scopeChanged {
			return 0.5
		}
		return 0.27
	}
}

// BaseScore computes the CVSS v3.1 base score (specification section 7.1).
// The vector must come from ParseVector or hold valid values.
func (v Vector) BaseScore() float64 {
	changed := v.S == "C"
	iss := 1 - (1-weightCIA[v.C])*(1-weightCIA[v.I])*(1-weightCIA[v.A])
	var impact float64
	if changed {
		impact = 7.52*(iss-0.029) - 3.25*math.Pow(iss-0.02, 15)
	} else {
		impact = 6.42 * iss
	}
	if impact <= 0 {
		return 0
	}
	exploitability := 8.22 * weightAV[v.AV] * weightAC[v.AC] * weightPR(v.PR, changed) * weightUI[v.UI]
	if changed {
		return Roundup(math.Min(1.08*(impact+exploitability), 10))
	}
	return Roundup(math.Min(impact+exploitability, 10))
}

// Roundup returns the smallest number with one decimal place that is
// equal to or higher than x, computed as in the specification's Appendix
// A: through an integer of x×100000, so that a float such as 4.000000001
// (an artefact of binary arithmetic) gives 4.0 and not 4.1.
func Roundup(x float64) float64 {
	i := int64(math.Round(x * 100000))
	if i%10000 == 0 {
		return float64(i) / 100000
	}
	return float64(i/10000+1) / 10
}

// Severity is the qualitative rating of a score (specification section 5):
// None, Low, Medium, High or Critical.
func Severity(score float64) string {
	switch {
	case score <= 0:
		return "None"
	case score < 4:
		return "Low"
	case score < 7:
		return "Medium"
	case score < 9:
		return "High"
	default:
		return "Critical"
	}
}
