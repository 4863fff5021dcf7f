package redlock

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// coordination primitives, leader election, stats and TLS options, against the
// masters TestMain started.

func TestSemaphore(t *testing.T) {
	a, b := open(t, WithFencing(true)), open(t)
	p1, err := a.Semaphore(bg, "go:sem", 2, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := b.Semaphore(bg, "go:sem", 2, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p1.Resource, "go:sem:sem:") || p1.Resource == p2.Resource {
		t.Fatalf("slots %q %q", p1.Resource, p2.Resource)
	}
	if _, err := a.Semaphore(bg, "go:sem", 2, 5*time.Second, 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("third permit: %v", err)
	}
	if err := p1.Extend(bg, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Watch(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		p3, err := b.Semaphore(bg, "go:sem", 2, 5*time.Second, 5*time.Second)
		if err == nil {
			err = p3.Unlock(bg)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := p1.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting permit: %v", err)
	}
	if err := p2.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Semaphore(bg, "go:sem", 0, time.Second, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("limit 0: %v", err)
	}
}

func TestRWLock(t *testing.T) {
	a, b := open(t, WithFencing(true)), open(t, WithFencing(true))
	r1, err := a.RWLockRead(bg, "go:rw", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.RWLockRead(bg, "go:rw", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.RWLockWrite(bg, "go:rw", 5*time.Second, 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("writer while read-held: %v", err)
	}
	r1.Unlock(bg)
	r2.Unlock(bg)
	w, err := a.RWLockWrite(bg, "go:rw", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.Fence == 0 {
		t.Fatal("write hold without a fence")
	}
	if _, err := b.RWLockRead(bg, "go:rw", 5*time.Second, 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("reader while write-held: %v", err)
	}
	if _, err := b.RWLockWrite(bg, "go:rw", 5*time.Second, 0); !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: %v", err)
	}
	if err := w.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	r3, err := b.RWLockRead(bg, "go:rw", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	r3.Unlock(bg)
}

func TestElection(t *testing.T) {
	a, b := open(t), open(t)
	ea, err := a.Elect(bg, "go:leader", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Elect(bg, "go:leader", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var first, other *Election
	var t1 uint64
	select {
	case t1 = <-ea.Elected:
		first, other = ea, eb
	case t1 = <-eb.Elected:
		first, other = eb, ea
	case <-time.After(5 * time.Second):
		t.Fatal("no leader elected")
	}
	time.Sleep(300 * time.Millisecond)
	if !first.Leader() || other.Leader() || first.Term() != t1 || t1 == 0 {
		t.Fatalf("leaders: first %v other %v term %d", first.Leader(), other.Leader(), t1)
	}
	if first.Validity() <= 0 {
		t.Fatal("leader without validity")
	}
	if err := first.Resign(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-first.Elected; ok {
		t.Fatal("Elected not closed after Resign")
	}
	select {
	case t2 := <-other.Elected:
		if t2 <= t1 {
			t.Fatalf("term after hand-over %d <= %d", t2, t1)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no hand-over after resign")
	}
	if err := other.Resign(); err != nil {
		t.Fatal(err)
	}
	if err := other.Resign(); err != nil { // idempotent
		t.Fatal(err)
	}
	// Close ends a live election and closes its channels.
	c := open(t)
	ec, err := c.Elect(bg, "go:leader2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	<-ec.Elected
	c.Close()
	if _, ok := <-ec.Lost; ok {
		t.Fatal("Lost not closed by Close")
	}
}

func TestStats(t *testing.T) {
	c := open(t)
	l, err := c.Lock(bg, "go:stats", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock(bg)
	s, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := s["operations_total"].(map[string]any)
	acq, _ := ops["acquire"].(map[string]any)
	if ok, _ := acq["ok"].(float64); ok < 1 {
		t.Fatalf("operations_total.acquire.ok missing: %v", s["operations_total"])
	}
	prom, err := c.StatsText(StatsPrometheus)
	if err != nil || !strings.Contains(prom, "redlock_operations_total") {
		t.Fatalf("prometheus: %v %.80q", err, prom)
	}
	if _, err := c.StatsText(9); !errors.Is(err, ErrInvalid) {
		t.Fatalf("format 9: %v", err)
	}
}

func TestTLSOptions(t *testing.T) {
	if !TLSSupported() {
		if _, err := Open([]string{"rediss://127.0.0.1:1"}); !errors.Is(err, ErrNotSup) {
			t.Fatalf("rediss:// without TLS: %v", err)
		}
		for _, o := range []Option{WithTLSVerify(false), WithTLSServerName("x"), WithTLS("", "", "")} {
			if _, err := Open(uris(), o); !errors.Is(err, ErrNotSup) {
				t.Fatalf("TLS option without TLS: %v", err)
			}
		}
		return
	}
	_, err := Open(uris(), WithTLS("/nonexistent/ca.pem", "", ""))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("missing CA file: %v", err)
	}
	c, err := Open(uris(), WithQuarantine(false), WithTLSVerify(false), WithTLSServerName("localhost"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// Not a line starting with "SKIP:": run-all.sh would count the whole binding as skipped.
	t.Skip("TLS round trip against rediss:// masters: SKIP here (covered by the C and Python tests)")
}

// Discovered-address patterns: an invalid one fails Open with ErrInvalid; a
// valid one leaves the URIs' own masters (never checked) locking as before.
func TestAllowDiscovered(t *testing.T) {
	for _, p := range []string{"", strings.Repeat("h", 300)} {
		if _, err := Open(uris(), WithAllowDiscovered("10.*", p)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("pattern of %d bytes: %v", len(p), err)
		}
	}
	many := make([]string, 65)
	for i := range many {
		many[i] = "10.0.0.*"
	}
	if _, err := Open(uris(), WithAllowDiscovered(many...)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("65 patterns: %v", err)
	}
	c := open(t, WithAllowDiscovered("10.*"), WithAllowDiscovered("*.redis.internal"))
	l, err := c.Lock(bg, "go:allow-discovered", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(bg); err != nil {
		t.Fatal(err)
	}
}
