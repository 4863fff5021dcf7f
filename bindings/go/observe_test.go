package redlock

// Client.Leader and Client.Observe against the test masters: a hand-off
// by resign is seen through the release announcement (the poll is far
// longer than the waits).  Every wait has a deadline.

import (
	"errors"
	"testing"
	"time"
)

// nextView is the first view from views within d that ok accepts (others,
// such as a half-done hand-off's LeaderNone, are skipped).
func nextView(t *testing.T, views <-chan Leader, d time.Duration, what string, ok func(Leader) bool) Leader {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case v := <-views:
			if ok(v) {
				return v
			}
		case <-deadline:
			t.Fatalf("%s: not seen within %v", what, d)
		}
	}
}

// waitLeader waits (5 s at most) for Leader to give owner leading in term.
func waitLeader(t *testing.T, c *Client, name, owner string, term uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		now, err := c.Leader(bg, name)
		if err != nil {
			t.Fatal(err)
		}
		if now.State == LeaderHeld && now.Owner == owner && now.Term == term && now.TTL > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Leader never gave %q in term %d: %+v", owner, term, now)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLeaderAndObserve(t *testing.T) {
	const name = "go:observe"
	a := open(t, WithOwner("leader-a"))
	b := open(t, WithOwner("leader-b"))
	watcher := open(t)

	v, err := watcher.Leader(bg, name)
	if err != nil {
		t.Fatal(err)
	}
	if v.State != LeaderNone || v.Term != 0 || v.Owner != "" || v.TTL != 0 {
		t.Fatalf("nobody leads yet: %+v", v)
	}

	views := make(chan Leader, 64)
	// A poll far beyond the waits below: what is seen in time came from an
	// announcement (or the first read).
	obs, err := watcher.Observe(name, time.Minute, func(l Leader) { views <- l })
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Stop()
	first := nextView(t, views, 5*time.Second, "first view", func(Leader) bool { return true })
	if first.State != LeaderNone {
		t.Fatalf("first view %+v", first)
	}

	ea, err := a.Elect(bg, name, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ta := wonTerm(t, ea, "a")
	// The first view of a new leader carries its exact term: the observer
	// reads again while a fence commit may be under way.
	va := nextView(t, views, 5*time.Second, "a leads", func(l Leader) bool { return l.State == LeaderHeld })
	if va.Owner != "leader-a" || va.Term != ta || va.TTL <= 0 || va.TTL > 20*time.Second {
		t.Fatalf("a's term %d: view %+v", ta, va)
	}
	waitLeader(t, b, name, "leader-a", ta)

	// Hand-off: b campaigns, a resigns; b wins at once (woken by the release).
	eb, err := b.Elect(bg, name, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Resign()
	if err := ea.Resign(); err != nil {
		t.Fatal(err)
	}
	tb := wonTerm(t, eb, "b, after a resigned,")
	vb := nextView(t, views, 5*time.Second, "the hand-off to b", func(l Leader) bool {
		return l.State == LeaderHeld && l.Owner == "leader-b"
	})
	if vb.Term != tb {
		t.Fatalf("b's term %d (a's %d): view %+v", tb, ta, vb)
	}
	waitLeader(t, watcher, name, "leader-b", tb)

	if err := obs.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := obs.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, err := watcher.Observe(name, 0, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil fn: %v", err)
	}
	if _, err := watcher.Leader(bg, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
}

func TestObserverStoppedByClose(t *testing.T) {
	c := open(t)
	views := make(chan Leader, 8)
	obs, err := c.Observe("go:observe:close", 0, func(l Leader) { views <- l })
	if err != nil {
		t.Fatal(err)
	}
	nextView(t, views, 5*time.Second, "first view", func(Leader) bool { return true })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := obs.Stop(); err != nil { // the close stopped it: nothing left to do
		t.Fatal(err)
	}
	if _, err := c.Observe("go:observe:close", 0, func(Leader) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestObserveStopFromCallback(t *testing.T) {
	c := open(t)
	stopped := make(chan error, 1)
	var obs *Observer
	ready := make(chan struct{})
	var err error
	obs, err = c.Observe("go:observe:self", 0, func(Leader) {
		<-ready
		select {
		case stopped <- obs.Stop():
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fn did not run or Stop blocked inside it")
	}
}
