package cveagent

import (
	"context"
	"fmt"
	"regexp"

	"github.com/superstep-dev/superstep/agents"
	"github.com/superstep-dev/superstep/examples/cveassessment"
)

// Tool names, as the model sees them.
const (
	ToolFetchCVE    = "fetch_cve"
	ToolFetchCVSS   = "fetch_cvss"
	ToolFetchVendor = "fetch_vendor_statement"
	ToolScoreCVSS   = "score_cvss"
)

// Score is what score_cvss returns: the vector as the calculator wrote it
// back, its CVSS v3.1 base score and its severity band.
type Score struct {
	Vector    string  `json:"vector"`
	BaseScore float64 `json:"base_score"`
	Severity  string  `json:"severity"`
}

// ScoreVector scores a CVSS v3.1 vector with cveassessment's calculator.
func ScoreVector(vector string) (Score, error) {
	v, err := cveassessment.ParseVector(vector)
	if err != nil {
		return Score{}, err
	}
	s := v.BaseScore()
	return Score{Vector: v.String(), BaseScore: s, Severity: cveassessment.Severity(s)}, nil
}

var cveIDPattern = regexp.MustCompile(`^CVE-\d{4}-\d{4,}$`)

func checkID(id string) error {
	if !cveIDPattern.MatchString(id) {
		return fmt.Errorf("%q is not a CVE id: want CVE-YYYY-NNNN (four or more digits)", id)
	}
	return nil
}

type cveArgs struct {
	CVEID string `json:"cve_id" jsonschema:"description=The CVE id, e.g. CVE-2021-44228"`
}

type vendorArgs struct {
	Vendor string `json:"vendor" jsonschema:"description=The vendor named by fetch_cvss"`
	CVEID  string `json:"cve_id" jsonschema:"description=The CVE id, e.g. CVE-2021-44228"`
}

type scoreArgs struct {
	Vector string `json:"vector" jsonschema:"description=A CVSS v3.1 base vector, e.g. CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"`
}

// Tools are the agent's tools over f: the CVE record, the CVSS data and a
// vendor's statement from the Fetcher, and the CVSS v3.1 calculator. A
// failure (an unknown CVE, a malformed vector) goes back to the model as
// an error ToolMessage, so it can correct itself.
func Tools(f cveassessment.Fetcher) ([]agents.Tool, error) {
	fetchCVE, err := agents.NewTool(ToolFetchCVE, "Fetch a CVE's record: description, weakness (CWE) and affected products.",
		func(ctx context.Context, a cveArgs) (any, error) {
			if err := checkID(a.CVEID); err != nil {
				return nil, err
			}
			return f.CVE(ctx, a.CVEID)
		})
	if err != nil {
		return nil, err
	}
	fetchCVSS, err := agents.NewTool(ToolFetchCVSS, "Fetch the CVSS v3.1 vector a scoring database publishes for a CVE, and the vendor with its own statement, if any.",
		func(ctx context.Context, a cveArgs) (any, error) {
			if err := checkID(a.CVEID); err != nil {
				return nil, err
			}
			return f.CVSS(ctx, a.CVEID)
		})
	if err != nil {
		return nil, err
	}
	fetchVendor, err := agents.NewTool(ToolFetchVendor, "Fetch a vendor's own CVSS statement for a CVE (only when fetch_cvss names a vendor). It knows the product's defaults better than the database.",
		func(ctx context.Context, a vendorArgs) (any, error) {
			if err := checkID(a.CVEID); err != nil {
				return nil, err
			}
			return f.VendorStatement(ctx, a.Vendor, a.CVEID)
		})
	if err != nil {
		return nil, err
	}
	score, err := agents.NewTool(ToolScoreCVSS, "Compute the CVSS v3.1 base score and severity of a vector with the specification's formulas.",
		func(_ context.Context, a scoreArgs) (any, error) { return ScoreVector(a.Vector) })
	if err != nil {
		return nil, err
	}
	return []agents.Tool{fetchCVE, fetchCVSS, fetchVendor, score}, nil
}
