package recorder

import (
	"iter"
	"maps"
)

// Observations is read access to what a recorder saw, for code that only reads it (a cell's
// assembly): a View reads the recorder's own records in place, a Snapshot is a copy. A lookup of
// a name not seen returns the zero value, as a map index does.
type Observations interface {
	ClaimNamed(name string) (Claim, bool)
	SandboxNamed(name string) (Sandbox, bool)
	EachClaim() iter.Seq2[string, Claim]
	EachSandbox() iter.Seq2[string, Sandbox]
	EachPod() iter.Seq2[string, Pod] // keyed by UID
	// PoolSamples are pool's status samples in order; the caller must not change them.
	PoolSamples(pool string) []PoolSample
	PoolMembersMax(pool string) int
	NumClaims() int
	NumPods() int
}

var (
	_ Observations = View{}
	_ Observations = Snapshot{}
)

// View reads the recorder's records in place, without the copy a Snapshot is (at 100,000 claims
// the copy was 60 MiB while a cell was assembled). It is valid only inside the Read call that
// handed it out.
type View struct{ r *Recorder }

// Read calls f with a view of everything observed, held still while f runs: the informers'
// handlers wait until f returns, and f must not call the recorder's other methods.
func (r *Recorder) Read(f func(View)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(View{r})
}

// Snapshot copies what v shows.
func (v View) Snapshot() Snapshot { return v.r.snapshotLocked() }

// The Observations methods, on the recorder's records.

func (v View) ClaimNamed(name string) (Claim, bool) {
	if c := v.r.claims[name]; c != nil {
		return v.r.claim(c), true
	}
	return Claim{}, false
}

func (v View) SandboxNamed(name string) (Sandbox, bool) {
	if s := v.r.sandboxes[name]; s != nil {
		return v.r.sandbox(s), true
	}
	return Sandbox{}, false
}

func (v View) EachClaim() iter.Seq2[string, Claim] {
	return func(yield func(string, Claim) bool) {
		for k, c := range v.r.claims {
			if !yield(k, v.r.claim(c)) {
				return
			}
		}
	}
}

func (v View) EachSandbox() iter.Seq2[string, Sandbox] {
	return func(yield func(string, Sandbox) bool) {
		for k, s := range v.r.sandboxes {
			if !yield(k, v.r.sandbox(s)) {
				return
			}
		}
	}
}

func (v View) EachPod() iter.Seq2[string, Pod] {
	return func(yield func(string, Pod) bool) {
		for k, p := range v.r.pods {
			if !yield(k, v.r.pod(p)) {
				return
			}
		}
	}
}

func (v View) PoolSamples(pool string) []PoolSample { return v.r.pools[pool] }
func (v View) PoolMembersMax(pool string) int       { return v.r.maxPoolMembers[pool] }
func (v View) NumClaims() int                       { return len(v.r.claims) }
func (v View) NumPods() int                         { return len(v.r.pods) }

// The Observations methods, on the copy.

func (s Snapshot) ClaimNamed(name string) (Claim, bool) {
	c, ok := s.Claims[name]
	return c, ok
}

func (s Snapshot) SandboxNamed(name string) (Sandbox, bool) {
	sb, ok := s.Sandboxes[name]
	return sb, ok
}

func (s Snapshot) EachClaim() iter.Seq2[string, Claim]     { return maps.All(s.Claims) }
func (s Snapshot) EachSandbox() iter.Seq2[string, Sandbox] { return maps.All(s.Sandboxes) }
func (s Snapshot) EachPod() iter.Seq2[string, Pod]         { return maps.All(s.Pods) }
func (s Snapshot) PoolSamples(pool string) []PoolSample    { return s.Pools[pool] }
func (s Snapshot) PoolMembersMax(pool string) int          { return s.MaxPoolMembers[pool] }
func (s Snapshot) NumClaims() int                          { return len(s.Claims) }
func (s Snapshot) NumPods() int                            { return len(s.Pods) }
