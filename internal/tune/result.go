package tune

import (
	"fmt"
	"strings"
	"time"

	"github.com/brakebench/brakebench/internal/brakes"
	"github.com/brakebench/brakebench/internal/stats"
)

// Schema names tune.json's format.
const Schema = "brakebench.tune/v1"

// BiasNote is what every tune says about its search's numbers.
const BiasNote = "The search's estimates are optimistic for its winner: the best of many noisy estimates is low by selection (the winner's curse), " +
	"and the intervals beside them are per setting, not corrected for that choice. They rank settings; they are not the effect. " +
	"The recommendation rests on the confirmation alone: the winner against no brake on fresh repetitions the search never saw."

// Result is a tune as tune.json records it.
type Result struct {
	Schema string `json:"schema"`
	Suite  string `json:"suite,omitempty"`
	// RunID, StartedAt, EndedAt and Dir are the CLI's (empty in a simulation).
	StartedAt time.Time `json:"startedAt,omitzero"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	Dir       string    `json:"dir,omitempty"`

	Objective     string       `json:"objective"`
	ObjectiveUnit string       `json:"objectiveUnit"`
	Constraints   []Constraint `json:"constraints,omitempty"`
	Dims          []Dim        `json:"space"`
	Method        string       `json:"method"`
	Budget        int          `json:"budget"`
	Spent         int          `json:"spent"`        // search cells run (at most Budget)
	ConfirmCells  int          `json:"confirmCells"` // the confirmation's cells, on top
	Seed          int64        `json:"seed"`
	Paired        bool         `json:"paired"`
	ConfirmDesign string       `json:"confirmDesign"`
	// Rounds are the search's rounds; Candidates every setting tried, in the order drawn.
	Rounds         []Round        `json:"rounds"`
	Candidates     []Candidate    `json:"candidates"`
	Winner         string         `json:"winner,omitempty"` // the search's winner (confirmed or not)
	Confirmation   *Confirmation  `json:"confirmation,omitempty"`
	Recommendation Recommendation `json:"recommendation"`
	// Spending is where the budget went, in order.
	Spending []Spend  `json:"spending"`
	Notes    []string `json:"notes,omitempty"`
	// Incomplete says why the tune did not finish (an interrupted run): no recommendation then.
	Incomplete string `json:"incomplete,omitempty"`
}

// Round is one search round.
type Round struct {
	Index      int      `json:"index"`
	Iteration  int      `json:"iteration"`
	Reps       int      `json:"reps"`
	Cells      int      `json:"cells"`
	Candidates []string `json:"candidates"`
	Kept       []string `json:"kept"`
	// Results is the round's results.json (the CLI's).
	Results string `json:"results,omitempty"`
}

// Candidate is one tried setting with what the search measured of it.
type Candidate struct {
	Item      string            `json:"item"`
	Values    map[string]string `json:"values"`
	Reps      int               `json:"reps"`      // search repetitions it got
	Iteration int               `json:"iteration"` // the iteration it was drawn in
	Rounds    int               `json:"rounds"`    // the last round it ran in
	// Pct is the estimated change of the objective against the baseline (%, from the mean log
	// ratio), CI its per-setting 95% interval (not corrected for the selection); Compared is
	// how many repetitions had a baseline repetition to compare with.
	Pct      stats.Num `json:"pct"`
	CI       stats.CI  `json:"ci"`
	Compared int       `json:"compared"`
	Checks   []Check   `json:"checks,omitempty"`
	Feasible bool      `json:"feasible"`
	Fate     string    `json:"fate"`
}

// Confirmation is the winner against no brake on fresh repetitions.
type Confirmation struct {
	Item         string    `json:"item"`
	Design       string    `json:"design"`
	RepsWinner   int       `json:"repsWinner"`
	RepsBaseline int       `json:"repsBaseline"`
	Verdict      string    `json:"verdict"` // faster, slower, equivalent, ~, insufficient repetitions, interrupted
	Pct          stats.Num `json:"pct"`
	CI           stats.CI  `json:"ci"`
	P            stats.Num `json:"p"`
	MDEPct       stats.Num `json:"mdePct"`
	Look         int       `json:"look"`
	Note         string    `json:"note,omitempty"`
	Checks       []Check   `json:"checks,omitempty"`
	Results      string    `json:"results,omitempty"` // the CLI's results.json of the confirmation
}

// Recommendation is the tune's answer.
type Recommendation struct {
	Recommend bool              `json:"recommend"`
	Item      string            `json:"item,omitempty"`
	Values    map[string]string `json:"values,omitempty"`
	Flags     []string          `json:"flags,omitempty"`
	Snippet   string            `json:"snippet"`
	Why       string            `json:"why"`
}

// Spend is one line of where the budget went.
type Spend struct {
	What  string `json:"what"`
	Cells int    `json:"cells"`
}

// Snippet is the controller args to paste into the agent-sandbox controller's container (none:
// keep the defaults).
func Snippet(flags []string) string {
	if len(flags) == 0 {
		return "# agent-sandbox controller: keep the defaults (no brake flags)\n"
	}
	var b strings.Builder
	b.WriteString("# agent-sandbox controller container, add to args:\n")
	for _, f := range flags {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	return b.String()
}

// method says how this tune searches, in one paragraph.
func (t *tuner) method() string {
	var dims []string
	for _, d := range t.sp.Dims {
		switch {
		case d.Kind == brakes.KindBool:
			dims = append(dims, d.Brake+" on/off")
		default:
			scale := "linear"
			if d.Log {
				scale = "log scale"
			}
			dims = append(dims, fmt.Sprintf("%s %s..%s (%s)", d.Brake, d.exact(d.Lo), d.exact(d.Hi), scale))
		}
	}
	var sched []string
	for _, r := range t.sp.Schedule() {
		sched = append(sched, fmt.Sprintf("%d:%dx%d", r.Iteration, r.Candidates, r.Reps))
	}
	pairing := "paired by round: each repetition against the baseline's of its round"
	if !t.sp.Paired {
		pairing = "two-sample: the difference of mean logs"
	}
	iters := t.sp.Iterations()
	more := ""
	if iters > 1 {
		more = fmt.Sprintf(" It halves %d times (iterated racing): first over settings drawn by Latin hypercube sampling, then over settings drawn around the previous "+
			"iteration's %d best (a normal step of one first-iteration stratum, halved each iteration), which race again with their repetitions so far.", iters, Elites)
	}
	return fmt.Sprintf("Successive halving over %s. Each round runs every surviving setting and the baseline (no brake) the same number of repetitions, "+
		"repetition r of each in round r; settings are ranked by the change of %s against the baseline (mean log ratio, %s), settings that violate a "+
		"constraint after the others, and the better half goes on; the rounds share the budget of %d cells equally, so fewer settings get more "+
		"repetitions each (planned iteration:settings x repetitions: %s).%s The last round's best setting that meets every constraint is confirmed "+
		"against no brake on fresh repetitions (%s) and recommended only when that test finds it faster and every constraint holds there.",
		strings.Join(dims, ", "), t.sp.Objective, pairing, t.sp.Budget, strings.Join(sched, ", "), more, t.sp.Design.Describe())
}
