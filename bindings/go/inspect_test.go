package redlock

// Owner labels, Inspect, Revoke and bounded holds against the test masters
// (TestMain's three redis-servers).  Every wait has a deadline.

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitErr is the one error ch delivers within d.
func waitErr(t *testing.T, ch <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed without an error", what)
		}
		return err
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
	}
	return nil
}

// wonTerm is the next term e wins within 5 s.
func wonTerm(t *testing.T, e *Election, who string) uint64 {
	t.Helper()
	select {
	case term := <-e.Elected:
		return term
	case <-time.After(5 * time.Second):
		t.Fatalf("%s not elected", who)
	}
	return 0
}

func TestOwnerLabel(t *testing.T) {
	a := open(t, WithOwner("go-worker-1"))
	l, err := a.Lock(bg, "go:owner", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(bg)
	if l.Owner() != "go-worker-1" || !strings.HasSuffix(l.Value, "~go-worker-1") || len(l.Value) != 32+1+11 {
		t.Fatalf("owner %q value %q", l.Owner(), l.Value)
	}
	for _, v := range onAll(t, "GET", "go:owner") {
		if v != l.Value {
			t.Fatalf("value on a master: %q", v)
		}
	}
	// Seen by another client, which set no label of its own.
	b := open(t)
	in, err := b.Inspect(bg, "go:owner", InspectLock)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Held || !in.Agreed || in.Owner != "go-worker-1" || in.Value != l.Value || in.Kind != "lock" ||
		in.Name != "go:owner" || in.Quorum != 2 || in.Count != 1 {
		t.Fatalf("inspect: %+v", in)
	}
	if in.TTLMinMs <= 0 || in.TTLMinMs > in.TTLMaxMs || in.TTLMaxMs > 5000 {
		t.Fatalf("ttl range %d..%d", in.TTLMinMs, in.TTLMaxMs)
	}
	if len(in.Masters) != 3 || len(in.Holders) != 1 || in.Holders[0].Owner != "go-worker-1" {
		t.Fatalf("masters %+v holders %+v", in.Masters, in.Holders)
	}
	for _, m := range in.Masters {
		if m.State != "holds" || m.Owner != "go-worker-1" || m.Holds != 1 || m.TTLMs <= 0 {
			t.Fatalf("master %+v", m)
		}
	}
	if !strings.Contains(in.Raw, `"owner":"go-worker-1"`) {
		t.Fatalf("raw %s", in.Raw)
	}
	// A lock without a label: Owner "".
	lb, err := b.Lock(bg, "go:owner:none", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Unlock(bg)
	if lb.Owner() != "" || len(lb.Value) != 32 {
		t.Fatalf("unlabelled: owner %q value %q", lb.Owner(), lb.Value)
	}
	// Refused labels: ErrInvalid from Open.
	for _, bad := range []string{"has~tilde", "has space", strings.Repeat("x", MaxOwner+1)} {
		c, err := Open(uris(), WithOwner(bad))
		if !errors.Is(err, ErrInvalid) {
			if c != nil {
				c.Close()
			}
			t.Fatalf("owner %q: %v", bad, err)
		}
	}
}

func TestInspectKinds(t *testing.T) {
	a := open(t, WithOwner("go-insp"))
	b := open(t)
	// Free.
	in, err := b.Inspect(bg, "go:insp:free", InspectLock)
	if err != nil {
		t.Fatal(err)
	}
	if in.Held || !in.Agreed || in.Owner != "" || in.Count != 0 || in.TTLMaxMs != 0 {
		t.Fatalf("free: %+v", in)
	}
	// Held on one master only (a minority): not held, not agreed.
	if _, err := redisCmd(masters[0].port, "SET", "go:insp:minority", "x~someone", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	in, err = b.Inspect(bg, "go:insp:minority", InspectLock)
	if err != nil {
		t.Fatal(err)
	}
	if in.Held || in.Agreed || in.Masters[0].State != "other" {
		t.Fatalf("minority: %+v", in)
	}
	redisCmd(masters[0].port, "DEL", "go:insp:minority")

	// Semaphore: one permit of 3.
	p, err := a.Semaphore(bg, "go:insp:sem", 3, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	in, err = b.Inspect(bg, "go:insp:sem", InspectSemaphore)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Held || in.Kind != "semaphore" || in.Count != 1 || len(in.Holders) != 1 ||
		in.Holders[0].Owner != "go-insp" || in.Holders[0].Value != p.Value {
		t.Fatalf("semaphore: %+v", in)
	}
	if !strings.HasSuffix(p.Resource, ":sem:"+strconv.Itoa(in.Holders[0].Slot)) {
		t.Fatalf("permit %q, slot %d", p.Resource, in.Holders[0].Slot)
	}
	p.Unlock(bg)

	// Read-write lock: two readers, then a writer.
	r1, err := a.RWLockRead(bg, "go:insp:rw", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.RWLockRead(bg, "go:insp:rw", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	in, err = b.Inspect(bg, "go:insp:rw", InspectRWLock)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Held || in.Kind != "rwlock" || in.Count != 2 || len(in.Holders) != 2 {
		t.Fatalf("readers: %+v", in)
	}
	for _, h := range in.Holders {
		if h.Mode != "read" {
			t.Fatalf("reader hold %+v", h)
		}
	}
	r1.Unlock(bg)
	r2.Unlock(bg)
	w, err := a.RWLockWrite(bg, "go:insp:rw", 5*time.Second, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	in, err = b.Inspect(bg, "go:insp:rw", InspectRWLock)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Held || in.Count != 1 || in.Holders[0].Mode != "write" || in.Holders[0].Owner != "go-insp" {
		t.Fatalf("writer: %+v", in)
	}
	w.Unlock(bg)

	// Election: the leader's label and term.
	e, err := a.Elect(bg, "go:insp:elect", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Resign()
	term := wonTerm(t, e, "the candidate")
	in, err = b.Inspect(bg, "go:insp:elect", InspectElection)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Held || in.Kind != "election" || in.Owner != "go-insp" || in.Fence < term {
		t.Fatalf("election (term %d): %+v", term, in)
	}

	// Refused arguments.
	if _, err := b.Inspect(bg, "", InspectLock); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty name: %v", err)
	}
	if _, err := b.Inspect(bg, "go:insp", InspectKind(99)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad kind: %v", err)
	}
}

func TestRevoke(t *testing.T) {
	holder := open(t, WithFencing(true), WithOwner("stuck"))
	admin := open(t, WithFencing(true))
	l, err := holder.Lock(bg, "go:revoke", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(bg)
	lost, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	fence, err := admin.Revoke(bg, "go:revoke")
	if err != nil {
		t.Fatal(err)
	}
	if fence <= l.Fence {
		t.Fatalf("revoke's fence %d, holder's %d", fence, l.Fence)
	}
	err = waitErr(t, lost, 5*time.Second, "the holder's watch")
	if !errors.Is(err, ErrLost) || errors.Is(err, ErrMaxHold) {
		t.Fatalf("holder lost with %v", err)
	}
	if !l.Lost() {
		t.Fatal("Lost() false after the revoke")
	}
	// The next holder's token is above the revoke's.
	n, err := admin.Lock(bg, "go:revoke", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n.Fence <= fence {
		t.Fatalf("next fence %d <= revoke's %d", n.Fence, fence)
	}
	n.Unlock(bg)
	if _, err := admin.Revoke(bg, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty resource: %v", err)
	}
}

func TestWatchBounded(t *testing.T) {
	c := open(t)
	other := open(t)
	before := time.Now()
	// A TTL far beyond the bound: the key goes by the release, not by expiry.
	l, err := c.Lock(bg, "go:bounded", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.WatchBounded(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bound 0: %v", err)
	}
	lost, err := l.WatchBounded(1200 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	err = waitErr(t, lost, 10*time.Second, "the bounded watch")
	if !errors.Is(err, ErrMaxHold) || errors.Is(err, ErrLost) {
		t.Fatalf("bounded watch ended with %v", err)
	}
	// Counted from the grant, which came after `before` (1 s: room for the
	// loop's millisecond clock).
	if held := time.Since(before); held < time.Second {
		t.Fatalf("ended after %v", held)
	}
	if _, ok := <-lost; ok {
		t.Fatal("channel not closed after the notification")
	}
	if !l.Lost() {
		t.Fatal("Lost() false after the bound")
	}
	// Released on every master (the release may still be on its way when
	// the callback runs), long before its TTL would have ended it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		gone := true
		for _, v := range onAll(t, "EXISTS", "go:bounded") {
			gone = gone && v == "0"
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("key left after the bound")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err := other.TryLock(bg, "go:bounded", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n.Unlock(bg)
	l.Unlock(bg) // still the caller's to free
}

func TestElectBounded(t *testing.T) {
	c := open(t)
	if _, err := c.ElectBounded(bg, "go:elect:bounded", time.Second, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bound 0: %v", err)
	}
	e, err := c.ElectBounded(bg, "go:elect:bounded", time.Second, 700*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Resign()
	t1 := wonTerm(t, e, "the candidate")
	err = waitErr(t, e.Lost, 5*time.Second, "the bounded term")
	if !errors.Is(err, ErrMaxHold) || errors.Is(err, ErrLost) {
		t.Fatalf("term ended with %v", err)
	}
	// It campaigns again, and (alone) wins a later term.
	t2 := wonTerm(t, e, "the candidate, after the bound,")
	if t2 <= t1 {
		t.Fatalf("term %d after %d", t2, t1)
	}
}

func TestWatchThenBound(t *testing.T) {
	c := open(t)
	l, err := c.Lock(bg, "go:bounded:later", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w1, err := l.Watch()
	if err != nil {
		t.Fatal(err)
	}
	// A bound set on a watched lock: the same channel, ended by the bound.
	w2, err := l.WatchBounded(300 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if w1 != w2 {
		t.Fatal("WatchBounded of a watched lock gave another channel")
	}
	if err := waitErr(t, w2, 10*time.Second, "the bound set later"); !errors.Is(err, ErrMaxHold) {
		t.Fatalf("ended with %v", err)
	}
	// The handle is still the caller's to free; the lock is gone.
	if err := l.Unlock(bg); !errors.Is(err, ErrLost) {
		t.Fatalf("unlock after the bound: %v", err)
	}
}
