package config

// Tune is `brakebench tune SUITE`: which brake settings are searched, within how many cells, for
// what. Its keys are checked here for what they hold; the brake names, ranges, metrics and
// constraints against the brake registry and the metric catalogue by internal/tune (exit 2
// before the tune touches a cluster). Other commands ignore the section.
type Tune struct {
	// Brakes are the tunable brakes whose settings are searched together (each candidate sets
	// every one of them; a switch is searched as on or off).
	Brakes []string `mapstructure:"brakes"`
	// Ranges override a brake's default range: items "BRAKE=LO..HI" ("max-refill-rate=5..80",
	// "replenish-delay=1s..30s"), in the brake key's unit.
	Ranges []string `mapstructure:"ranges"`
	// Budget is how many measured cells the search may run, the baseline's included (one cell:
	// one repetition of one setting). The confirmation comes on top (ConfirmRepetitions a side).
	Budget int `mapstructure:"budget"`
	// Candidates is how many settings the first round tries; 0 sizes it from Budget.
	Candidates int `mapstructure:"candidates"`
	// Objective is the summary metric minimised (a latency or duration: claim.p99_ms).
	Objective string `mapstructure:"objective"`
	// Constraints every recommended setting must meet: "METRIC<=VALUE" (also <, >=, >), VALUE a
	// number in the metric's unit, "baseline" (the no-brake cell's value in the same rounds) or
	// "F*baseline" ("pool.refill_s<=60", "cpu.kube-apiserver_s<=1.1*baseline").
	Constraints []string `mapstructure:"constraints"`
	// ConfirmRepetitions is the planned maximum of the confirmation A/B (winner against no brake,
	// on fresh repetitions), under matrix.sequential like any run.
	ConfirmRepetitions int `mapstructure:"confirmRepetitions"`
	// Seed draws the candidates and orders the cells; 0 = matrix.seed, or pick one and record it.
	Seed int64 `mapstructure:"seed"`
}

func defaultTune() Tune {
	return Tune{Brakes: []string{"max-refill-rate", "replenish-delay"}, Ranges: []string{}, Budget: 40,
		Objective: "claim.p99_ms", Constraints: []string{}, ConfirmRepetitions: 10}
}
