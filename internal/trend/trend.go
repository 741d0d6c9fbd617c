package trend

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/analysis"
	"github.com/brakebench/brakebench/internal/results"
	"github.com/brakebench/brakebench/internal/stats"
)

// Run is what trend reads of one results.json: its identity, provenance and summary, never its
// per-claim data (a year of nightly runs is hundreds of files of claims).
type Run struct {
	Path      string            `json:"path"`
	Schema    string            `json:"-"`
	Suite     string            `json:"suite"`
	RunID     string            `json:"runID"`
	StartedAt time.Time         `json:"startedAt"`
	Versions  map[string]string `json:"versions"`
	Cluster   struct {
		Provider      string `json:"provider"`
		ServerVersion string `json:"serverVersion"`
		Context       string `json:"context,omitempty"`
	} `json:"cluster"`
	Summary []results.Summary `json:"-"`
}

// summaryOnly decodes the fields trend needs; json skips the cells (and their claims) without
// building them.
type summaryOnly struct {
	Schema    string            `json:"schema"`
	Suite     string            `json:"suite"`
	RunID     string            `json:"runID"`
	StartedAt time.Time         `json:"startedAt"`
	Versions  map[string]string `json:"versions"`
	Cluster   json.RawMessage   `json:"cluster"`
	Summary   []results.Summary `json:"summary"`
	// Incomplete says why a run stopped early (a run with no cells is refused with it).
	Incomplete string `json:"incomplete"`
}

// Expand turns the arguments of `brakebench trend` into results files: a directory stands for
// every results.json below it. A file named twice (the same file twice, or a file and a directory
// holding it; symbolic links resolved) is an error naming both arguments: it would count as two
// runs.
func Expand(args []string) ([]string, error) {
	var out []string
	by := map[string]int{} // resolved path -> index of the argument that named it
	add := func(p string, arg int) error {
		key := p
		if abs, err := filepath.Abs(p); err == nil {
			key = abs
		}
		if real, err := filepath.EvalSymlinks(key); err == nil {
			key = real
		}
		if first, dup := by[key]; dup {
			return fmt.Errorf("%s is given twice, by argument %d (%s) and argument %d (%s): a run counts once in a trend", p, first+1, args[first], arg+1, args[arg])
		}
		by[key] = arg
		out = append(out, p)
		return nil
	}
	for i, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(a, i); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == "results.json" {
				return add(p, i)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no results.json in %s", strings.Join(args, ", "))
	}
	return out, nil
}

// Load reads the runs, refuses runs of another schema, of mixed suites, without cells, and two
// files holding one run (a copy: the same run id and start time), naming the files, and orders
// them by start time.
func Load(paths []string) ([]Run, error) {
	var runs []Run
	type runKey struct {
		id    string
		start time.Time
	}
	seen := map[runKey]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var s summaryOnly
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s: not a results file: %v", p, err)
		}
		if s.Schema != results.SchemaVersion {
			return nil, fmt.Errorf("%s: schema %q, this brakebench reads %q", p, s.Schema, results.SchemaVersion)
		}
		// Cells are not decoded (a year of them is too much); every cell has a summary.
		if len(s.Summary) == 0 {
			return nil, results.NoCellsError(p, s.Incomplete)
		}
		r := Run{Path: p, Schema: s.Schema, Suite: s.Suite, RunID: s.RunID, StartedAt: s.StartedAt, Versions: s.Versions, Summary: s.Summary}
		if len(s.Cluster) > 0 {
			_ = json.Unmarshal(s.Cluster, &r.Cluster)
		}
		runs = append(runs, r)
	}
	for _, r := range runs[1:] {
		if r.Suite != runs[0].Suite {
			return nil, fmt.Errorf("%s is a %s run and %s a %s run: a trend follows one suite (pass the runs of one suite)", runs[0].Path, runs[0].Suite, r.Path, r.Suite)
		}
	}
	for _, r := range runs {
		if k := (runKey{r.RunID, r.StartedAt.UTC()}); r.RunID != "" {
			if first, dup := seen[k]; dup {
				return nil, fmt.Errorf("%s and %s hold the same run (id %s, started %s): a run counts once in a trend; leave the copy out", first, r.Path, r.RunID, r.StartedAt.Format(time.RFC3339))
			}
			seen[k] = r.Path
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].StartedAt.Before(runs[j].StartedAt) })
	return runs, nil
}

// Point is one run's value of a series.
type Point struct {
	Value stats.Num `json:"value"`
	CI    stats.CI  `json:"ci"`
}

// Series is one cell's metric over the runs (a point per run; NaN where the run lacks it).
type Series struct {
	Cell         string        `json:"cell"`
	Key          string        `json:"key"`
	Unit         string        `json:"unit"`
	Points       []Point       `json:"points"`
	ChangePoints []ChangePoint `json:"changePoints"`
	// Note says why nothing was detected when the series is too short.
	Note string `json:"note,omitempty"`
}

// Trend is trend.json.
type Trend struct {
	Suite   string   `json:"suite"`
	Runs    []Run    `json:"runs"`
	Options Options  `json:"options"`
	Series  []Series `json:"series"`
	Notes   []string `json:"notes,omitempty"`
}

// Build lines the runs' summaries up per cell and metric and detects change points.
func Build(runs []Run, opt Options) *Trend {
	t := &Trend{Runs: runs, Options: opt}
	if len(runs) > 0 {
		t.Suite = runs[0].Suite
	}
	type id struct{ cell, key string }
	index := map[id]int{}
	for ri, r := range runs {
		for _, s := range r.Summary {
			for _, m := range s.Metrics {
				k := id{s.Name, m.Key}
				i, ok := index[k]
				if !ok {
					i = len(t.Series)
					index[k] = i
					pts := make([]Point, len(runs))
					for p := range pts {
						pts[p] = Point{Value: stats.Num(math.NaN()), CI: stats.CI{Lo: stats.Num(math.NaN()), Hi: stats.Num(math.NaN())}}
					}
					t.Series = append(t.Series, Series{Cell: s.Name, Key: m.Key, Unit: m.Unit, Points: pts})
				}
				t.Series[i].Points[ri] = Point{Value: m.Value, CI: m.CI}
			}
		}
	}
	if len(runs) < opt.MinRuns {
		t.Notes = append(t.Notes, fmt.Sprintf("%d runs: change points need at least %d, so none are claimed", len(runs), opt.MinRuns))
	}
	for i := range t.Series {
		s := &t.Series[i]
		xs := make([]float64, len(s.Points))
		n := 0
		for j, p := range s.Points {
			xs[j] = float64(p.Value)
			if !math.IsNaN(xs[j]) && !math.IsInf(xs[j], 0) {
				n++
			}
		}
		if n < opt.MinRuns {
			s.Note = fmt.Sprintf("insufficient runs (%d with a value; at least %d)", n, opt.MinRuns)
			continue
		}
		s.ChangePoints = ChangePoints(xs, opt)
		for k := range s.ChangePoints {
			cp := &s.ChangePoints[k]
			cp.Regression = analysis.WorseWhenHigher(s.Key) && cp.After > cp.Before
		}
	}
	return t
}

// Regressions lists the series whose newest run lies after a detected regression: their last
// change point made the metric worse (and none after it undid it).
func (t *Trend) Regressions() []string {
	var out []string
	for _, s := range t.Series {
		if n := len(s.ChangePoints); n > 0 && s.ChangePoints[n-1].Regression {
			cp := s.ChangePoints[n-1]
			run := t.Runs[cp.Index]
			out = append(out, fmt.Sprintf("%s %s: %+.1f%% since run %s (%s), p=%.2g", s.Cell, s.Key, cp.ChangePct, run.RunID, run.StartedAt.Format("2006-01-02 15:04"), cp.P))
		}
	}
	return out
}
