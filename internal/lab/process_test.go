package lab

import (
	"fmt"
	"net"
	"testing"
)

// freePort picks ports below the kernel's ephemeral range (from which outgoing connections take
// their source ports, so a port handed out there can be taken before the lab process binds it),
// and a port it returns can be listened on.
func TestFreePortBelowTheEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange()
	if lo <= 1024+portSpan {
		t.Skipf("ephemeral range %d-%d leaves no room below it", lo, hi)
	}
	seen := map[int]bool{}
	for i := 0; i < 20; i++ {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo || p < lo-portSpan {
			t.Errorf("port %d: want one in [%d, %d), below the ephemeral range %d-%d", p, lo-portSpan, lo, lo, hi)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		_ = l.Close()
		seen[p] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 picks gave %d distinct ports: want them spread (two lab processes must not pick one port)", len(seen))
	}
}
