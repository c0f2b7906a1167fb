package cveassessment_test

import (
	"context"
	"fmt"

	"github.com/superstep-dev/superstep/examples/cveassessment"
)

// Assess a CVE offline, from the fixtures and the scripted model.
func ExampleNew() {
	g, err := cveassessment.New(cveassessment.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), cveassessment.Input("CVE-2021-44228"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Vector)
	fmt.Println(out.Score, out.Severity)
	// Output:
	// CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H
	// 10 Critical
}

// The lint catches the plain fan-in at compile time.
func ExampleNewPlainFanIn() {
	g, err := cveassessment.NewPlainFanIn(cveassessment.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range g.Warnings() {
		fmt.Println(w.Node)
	}
	// Output:
	// normalise
}

func ExampleVector_BaseScore() {
	v, err := cveassessment.ParseVector("CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.BaseScore(), cveassessment.Severity(v.BaseScore()))
	_, err = cveassessment.ParseVector("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H")
	fmt.Println(err)
	// Output:
	// 6.4 Medium
	// malformed CVSS v3.1 vector: missing base metric(s) A
}
