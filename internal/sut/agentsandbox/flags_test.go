package agentsandbox

import (
	"reflect"
	"testing"
)

// The shapes of flag definitions in agent-sandbox's main.go (v0.5.5 and v1.0.1), including a
// definition whose name is on the next line.
const mainV055 = `
	flag.BoolVar(&enableWebhook, "enable-webhook", true, "Enable webhook server and webhook registrations.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "The port the webhook server binds to.")
	flag.DurationVar(&sandboxWarmPoolReplenishDelay, "sandbox-warm-pool-replenish-delay", 0,
		"wait before refilling")
	flag.Float64Var(&kubeAPIQPS, "kube-api-qps", -1.0, "qps")
	flag.BoolVar(&disableClaimEvents,
		"disable-claim-events", false, "no events")
	opts.BindFlags(flag.CommandLine)
	fmt.Println("not-a-flag")
`

const mainV101 = `
	flag.Float64Var(&kubeAPIQPS, "kube-api-qps", -1.0, "qps")
	flag.DurationVar(&sandboxWriteBehindWindow, "sandbox-write-behind-window", 0, "coalesce")
	flag.Parse()
`

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name, src string
		defined   []string
		undefined []string
	}{
		{"v0.5.5 shapes", mainV055,
			[]string{"enable-webhook", "--webhook-port=1", "--sandbox-warm-pool-replenish-delay=15s", "kube-api-qps", "--disable-claim-events", "--kubeconfig=/x", "--zap-log-level=5"},
			[]string{"not-a-flag", "sandbox-write-behind-window"}},
		{"v1.0.1 has no webhook flags and no BindFlags", mainV101,
			[]string{"--kube-api-qps=5", "--sandbox-write-behind-window=250ms", "kubeconfig"},
			[]string{"--enable-webhook=false", "webhook-port", "zap-log-level"}},
		{"no flag package at all", "package main\nfunc main() {}\n", nil, []string{"kubeconfig", "enable-webhook"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := parseFlags(tc.src)
			for _, d := range tc.defined {
				if !f.Defines(d) {
					t.Errorf("%s: not defined, want defined (have %v)", d, f.Names())
				}
			}
			for _, u := range tc.undefined {
				if f.Defines(u) {
					t.Errorf("%s: defined, want undefined", u)
				}
			}
		})
	}
}

func TestUndefinedKeepsOrderAndSkipsValues(t *testing.T) {
	f := parseFlags(mainV101)
	got := f.Undefined([]string{"--enable-webhook=false", "--kube-api-qps=5", "positional", "--webhook-port=9443"})
	if want := []string{"--enable-webhook=false", "--webhook-port=9443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Undefined = %v, want %v", got, want)
	}
}

func TestStartupFailure(t *testing.T) {
	tests := []struct{ name, log, want string }{
		{"unknown flag, then usage", "flag provided but not defined: -enable-webhook\nUsage of /bin/agent-sandbox-controller:\n  -api-connections int\n    \tshard writes (default 1)\n", "flag provided but not defined: -enable-webhook"},
		{"bad value", "invalid value \"x\" for flag -kube-api-qps: parse error\nUsage of c:\n", "invalid value \"x\" for flag -kube-api-qps: parse error"},
		{"zap error line last", `{"level":"info","msg":"starting"}` + "\n" + `{"level":"error","msg":"unable to start manager","error":"no kubeconfig"}` + "\n", `{"level":"error","msg":"unable to start manager","error":"no kubeconfig"}`},
		{"panic", "goroutine 1\npanic: boom\n", "panic: boom"},
		{"nothing to say", `{"level":"info","msg":"starting"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := StartupFailure(tc.log); got != tc.want {
				t.Errorf("StartupFailure = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckValue(t *testing.T) {
	f := parseFlags(mainV055)
	tests := []struct{ arg, want string }{
		{"--kube-api-qps=5", ""},
		{"--kube-api-qps=5.5", ""},
		{"--kube-api-qps=fast", "--kube-api-qps=fast is not a valid float64"},
		{"--sandbox-warm-pool-replenish-delay=15s", ""},
		{"--sandbox-warm-pool-replenish-delay=15", "--sandbox-warm-pool-replenish-delay=15 is not a valid duration"},
		{"--webhook-port=9443", ""},
		{"--webhook-port=0x10", ""},
		{"--webhook-port=9443.5", "--webhook-port=9443.5 is not a valid int"},
		{"--disable-claim-events", ""},
		{"--disable-claim-events=true", ""},
		{"--disable-claim-events=yes", "--disable-claim-events=yes is not a valid bool"},
		{"--kube-api-qps", "--kube-api-qps needs a value (--kube-api-qps=...)"},
		{"--zap-log-level=5", ""}, // defined by a library: its kind is not checked
		{"--not-defined=x", ""},   // undefined: Undefined's business, not this check's
		{"--kubeconfig=/some/path", ""},
	}
	for _, tc := range tests {
		if got := f.CheckValue(tc.arg); got != tc.want {
			t.Errorf("CheckValue(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}
