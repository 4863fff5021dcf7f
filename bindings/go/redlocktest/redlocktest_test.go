package redlocktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"redlock-c.invalid/redlock"
	"redlock-c.invalid/redlock/redlocktest"
)

var bg = context.Background()

func open(t *testing.T, m *redlocktest.Masters, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithQuarantine(false), redlock.WithRetry(0, 10*time.Millisecond, 10*time.Millisecond)}, opts...)
	c, err := redlock.Open(m.Nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Two clients exclude each other on three fakes; two fakes down: ErrNoQuorum.
func TestExclusionAndNoQuorum(t *testing.T) {
	fakes := redlocktest.Start(t, 3)
	if !strings.HasPrefix(fakes.Nodes[0], "unix://") {
		t.Fatalf("node %q", fakes.Nodes[0])
	}
	a, b := open(t, fakes), open(t, fakes)
	held, err := a.Lock(bg, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := fakes.KeyCount("job"); n != 3 {
		t.Fatalf("key on %d masters", n)
	}
	if _, err := b.TryLock(bg, "job", 10*time.Second); !errors.Is(err, redlock.ErrLocked) {
		t.Fatalf("b: %v", err)
	}
	if err := held.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	fakes.Kill(0)
	fakes.Kill(1)
	if _, err := b.Lock(bg, "job", 10*time.Second); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("with two fakes down: %v", err)
	}
}

// Virtual time: a 30 s lease lapses on the fakes after Advance.
func TestVirtualTime(t *testing.T) {
	fakes := redlocktest.Start(t, 3, redlocktest.Options{VirtualTime: true})
	a, b := open(t, fakes), open(t, fakes)
	held, err := a.Lock(bg, "lease", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fakes.Advance(30*time.Second + time.Millisecond)
	if n, _ := fakes.KeyCount("lease"); n != 0 {
		t.Fatalf("key still on %d masters", n)
	}
	other, err := b.TryLock(bg, "lease", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Extend(bg, 30*time.Second); !errors.Is(err, redlock.ErrLost) {
		t.Fatalf("extend after the lease lapsed: %v", err)
	}
	other.Unlock(bg)
}

// Modes, pause and failover over TCP.
func TestModesAndFaults(t *testing.T) {
	fakes := redlocktest.Start(t, 3, redlocktest.Options{TCP: true})
	if !strings.HasPrefix(fakes.Nodes[0], "redis://127.0.0.1:") {
		t.Fatalf("node %q", fakes.Nodes[0])
	}
	a, b := open(t, fakes), open(t, fakes)
	fakes.SetMode(redlocktest.All, redlocktest.Refuse)
	if _, err := a.TryLock(bg, "m", 10*time.Second); !errors.Is(err, redlock.ErrLocked) {
		t.Fatalf("refuse mode: %v", err)
	}
	fakes.SetMode(redlocktest.All, redlocktest.Grant)
	x, err := a.Lock(bg, "m", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	y, err := b.TryLock(bg, "m", 10*time.Second)
	if err != nil {
		t.Fatalf("grant mode, second holder: %v", err)
	}
	x.Unlock(bg)
	y.Unlock(bg)
	fakes.SetMode(redlocktest.All, redlocktest.Normal)
	fakes.Pause(2)
	held, err := a.Lock(bg, "p", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if has, _ := fakes.HasKey(2, "p"); has {
		t.Fatal("a paused master took the key")
	}
	fakes.Resume(2)
	fakes.Failover(1, time.Minute)
	if has, _ := fakes.HasKey(1, "p"); has {
		t.Fatal("a replica a minute behind has the key")
	}
	held.Unlock(bg)
}

// Slow takes a sub-millisecond duration (rounded up to 1 ms, not down to 0: off).
func TestSlowRoundsUp(t *testing.T) {
	fakes := redlocktest.Start(t, 1)
	if err := fakes.Slow(0, 500*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	a := open(t, fakes)
	held, err := a.Lock(bg, "s", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held.Unlock(bg)
	if n, err := fakes.Commands(0); err != nil || n == 0 {
		t.Fatalf("commands %d, %v", n, err)
	}
}

// Fencing tokens rise on the fakes.
func TestFencing(t *testing.T) {
	fakes := redlocktest.Start(t, 3)
	a := open(t, fakes, redlock.WithFencing(true))
	first, err := a.Lock(bg, "f", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first.Unlock(bg)
	second, err := a.Lock(bg, "f", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if second.Fence <= first.Fence {
		t.Fatalf("fences %d then %d", first.Fence, second.Fence)
	}
	second.Unlock(bg)
}

// Misuse returns errors from New's masters.
func TestBadInput(t *testing.T) {
	if _, err := redlocktest.New(0); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("New(0): %v", err)
	}
	m, err := redlocktest.New(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Kill(1); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("Kill(1): %v", err)
	}
	if err := m.Kill(-1); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("Kill(-1): %v", err)
	}
	if err := m.Slow(0, -time.Millisecond); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("Slow(0, -1ms): %v", err)
	}
	if _, err := m.HasKey(1, "k"); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("HasKey(1): %v", err)
	}
	if has, err := m.HasKey(0, "k"); has || err != nil {
		t.Fatalf("HasKey(0) on an empty fake: %v, %v", has, err)
	}
	m.Stop()
	m.Stop()
	if err := m.Kill(0); !errors.Is(err, redlock.ErrInvalid) {
		t.Fatalf("Kill after Stop: %v", err)
	}
}
