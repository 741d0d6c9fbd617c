package reports

import (
	"encoding/xml"
	"fmt"

	"github.com/brakebench/brakebench/internal/gates"
	"github.com/brakebench/brakebench/internal/results"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Props     []junitProp   `xml:"properties>property"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders one testcase per gate (ClusterLoader2 style), so CI systems list gates as tests.
func JUnit(r *results.Results, verdicts []gates.Verdict) ([]byte, error) {
	s := junitSuite{Name: "brakebench." + r.Suite, Tests: len(verdicts)}
	for _, v := range verdicts {
		c := junitCase{Name: v.Name, ClassName: "brakebench." + r.Suite + ".gates",
			Props: []junitProp{
				{"expr", v.Expr},
				{"measured", fmt.Sprintf("%g%s", v.Measured, v.Unit)},
				{"threshold", fmt.Sprintf("%g%s", v.Threshold, v.Unit)},
			},
			SystemOut: v.Message}
		if !v.Passed {
			s.Failures++
			c.Failure = &junitFailure{Message: v.Message, Text: fmt.Sprintf("%s\nmeasured %g%s, threshold %g%s", v.Expr, v.Measured, v.Unit, v.Threshold, v.Unit)}
		}
		s.Cases = append(s.Cases, c)
	}
	// An incomplete run is not a pass, however its gates read on the cells that ran.
	if why := IncompleteText(r); why != "" {
		s.Tests++
		s.Failures++
		s.Cases = append(s.Cases, junitCase{Name: "run completed its plan", ClassName: "brakebench." + r.Suite + ".run",
			SystemOut: why, Failure: &junitFailure{Message: why, Text: why}})
	}
	out, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), out...), nil
}
