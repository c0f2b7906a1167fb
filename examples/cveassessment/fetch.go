package cveassessment

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrUnknownCVE is returned by a Fetcher that has no record of a CVE id.
var ErrUnknownCVE = errors.New("unknown CVE")

// CVERecord is what the agent needs from a CVE entry.
type CVERecord struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	CWE         string   `json:"cwe"`
	Products    []string `json:"products"`
}

// CVSSRecord is the CVSS assessment a scoring database publishes for a
// CVE, and which vendor, if any, published its own statement.
type CVSSRecord struct {
	Source string `json:"source"`
	Vector string `json:"vector"`
	// Vendor names the supplier with its own CVSS statement; "" when
	// there is none to fetch.
	Vendor string `json:"vendor"`
}

// VendorStatement is a supplier's own view of a CVE's severity, which often
// differs from the database's (a non-default configuration, a mitigated
// build).
type VendorStatement struct {
	Vendor string `json:"vendor"`
	Vector string `json:"vector"`
	Note   string `json:"note"`
}

// Fetcher is where the agent gets its facts: in production an NVD client,
// a CVE Services client and vendor advisory feeds; in tests and in the
// Studio, Fixtures.
type Fetcher interface {
	CVE(ctx context.Context, id string) (CVERecord, error)
	CVSS(ctx context.Context, id string) (CVSSRecord, error)
	VendorStatement(ctx context.Context, vendor, id string) (VendorStatement, error)
}

// Fixtures is a Fetcher over a few condensed local records, so the example
// runs without network access. The texts are summaries written for this
// example, not the authoritative records.
type Fixtures struct{}

type fixture struct {
	cve    CVERecord
	cvss   CVSSRecord
	vendor *VendorStatement
}

var fixtures = map[string]fixture{
	// Remote code execution through message lookups: products listed,
	// no vendor statement.
	"CVE-2021-44228": {
		cve: CVERecord{
			ID:          "CVE-2021-44228",
			Description: "A logging library evaluates lookup expressions in logged messages; an attacker who controls a logged string can make the server load and run remote code.",
			CWE:         "CWE-502",
			Products:    []string{"Apache Log4j 2.0-beta9 to 2.14.1"},
		},
		cvss: CVSSRecord{Source: "NVD", Vector: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H"},
	},
	// Memory disclosure over TLS heartbeats: products listed, and the
	// vendor published its own statement.
	"CVE-2014-0160": {
		cve: CVERecord{
			ID:          "CVE-2014-0160",
			Description: "A TLS heartbeat handler does not check a length field, so a remote peer can read up to 64 KB of process memory per request.",
			CWE:         "CWE-125",
			Products:    []string{"OpenSSL 1.0.1 to 1.0.1f"},
		},
		cvss: CVSSRecord{Source: "NVD", Vector: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N", Vendor: "OpenSSL"},
		vendor: &VendorStatement{
			Vendor: "OpenSSL",
			Vector: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N",
			Note:   "Only builds with the heartbeat extension enabled (the default) are affected.",
		},
	},
	// A local desktop bug with no product list and a vendor statement
	// that lowers the database's score.
	"CVE-2099-0001": {
		cve: CVERecord{
			ID:          "CVE-2099-0001",
			Description: "Opening a crafted project file in a desktop editor overflows a parser buffer and runs code as the user.",
			CWE:         "CWE-787",
		},
		cvss: CVSSRecord{Source: "NVD", Vector: "CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", Vendor: "ExampleSoft"},
		vendor: &VendorStatement{
			Vendor: "ExampleSoft",
			Vector: "CVSS:3.1/AV:L/AC:H/PR:N/UI:R/S:U/C:H/I:H/A:H",
			Note:   "Exploitation needs a non-default plugin; we rate attack complexity high.",
		},
	},
	// A fictional informational entry: nothing to generate, nothing to
	// fetch, and no impact.
	"CVE-2099-0002": {
		cve: CVERecord{
			ID:          "CVE-2099-0002",
			Description: "A status page reveals the server's build number, which is already public.",
			CWE:         "CWE-200",
		},
		cvss: CVSSRecord{Source: "NVD", Vector: "CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:N/A:N"},
	},
}

// FixtureIDs lists the CVE ids Fixtures knows, sorted.
func FixtureIDs() []string {
	ids := make([]string, 0, len(fixtures))
	for id := range fixtures {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func lookup(id string) (fixture, error) {
	f, ok := fixtures[id]
	if !ok {
		return fixture{}, fmt.Errorf("%w %q (the fixtures know %v)", ErrUnknownCVE, id, FixtureIDs())
	}
	return f, nil
}

// CVE implements Fetcher.
func (Fixtures) CVE(_ context.Context, id string) (CVERecord, error) {
	f, err := lookup(id)
	if err != nil {
		return CVERecord{}, err
	}
	rec := f.cve
	rec.Products = slices.Clone(rec.Products)
	return rec, nil
}

// CVSS implements Fetcher.
func (Fixtures) CVSS(_ context.Context, id string) (CVSSRecord, error) {
	f, err := lookup(id)
	return f.cvss, err
}

// VendorStatement implements Fetcher.
func (Fixtures) VendorStatement(_ context.Context, vendor, id string) (VendorStatement, error) {
	f, err := lookup(id)
	if err != nil {
		return VendorStatement{}, err
	}
	if f.vendor == nil || f.vendor.Vendor != vendor {
		return VendorStatement{}, fmt.Errorf("%w: %s has no statement from %q", ErrUnknownCVE, id, vendor)
	}
	return *f.vendor, nil
}
