package redlock

// cancel_test.go: ctx against real masters.  A canceled acquisition is ended
// in the library (redlock_cancel): INFO commandstats shows that no lock
// command reaches any master after it, and no key is left.  The one-round
// calls (TryLock, Extend, Unlock) stop waiting when ctx is done; Elect's ctx
// ends the campaign.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// quietWindow: how long the masters are watched for a stray command after a
// cancel (the bound of an observation, not a wait for an outcome).
const quietWindow = time.Second

// cmdCalls is the calls of the named commands one master has run (INFO
// commandstats; commands run by scripts count too).
func cmdCalls(t *testing.T, port int, names ...string) int64 {
	t.Helper()
	info, err := redisCmd(port, "INFO", "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats on %d: %v", port, err)
	}
	var n int64
	for _, name := range names {
		field := "cmdstat_" + name + ":calls="
		if i := strings.Index(info, field); i >= 0 {
			rest := info[i+len(field):]
			if j := strings.IndexByte(rest, ','); j >= 0 {
				rest = rest[:j]
			}
			v, _ := strconv.ParseInt(rest, 10, 64)
			n += v
		}
	}
	return n
}

// lockCommands: every command an acquisition or release sends.
func lockCommands(t *testing.T, port int) int64 { return cmdCalls(t, port, "set", "evalsha", "eval") }

// setCalls: what an acquisition without fencing sends (a release is a script).
func setCalls(t *testing.T, port int) int64 { return cmdCalls(t, port, "set") }

func counts(t *testing.T, count func(*testing.T, int) int64) []int64 {
	t.Helper()
	out := make([]int64, len(masters))
	for i, m := range masters {
		out[i] = count(t, m.port)
	}
	return out
}

func waitUntil(t *testing.T, what string, limit time.Duration, pred func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !pred() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertQuiet fails as soon as a master's count moves from base within
// quietWindow.
func assertQuiet(t *testing.T, what string, base []int64, count func(*testing.T, int) int64) {
	t.Helper()
	end := time.Now().Add(quietWindow)
	for time.Now().Before(end) {
		for i, m := range masters {
			if n := count(t, m.port); n != base[i] {
				t.Fatalf("%s: master %d ran %d more lock command(s)", what, i, n-base[i])
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// idle: no request of these clients is queued or unanswered on any master
// (their stats), so that a round decided by a quorum does not trail into a
// quiet window.
func idle(t *testing.T, clients ...*Client) bool {
	t.Helper()
	for _, c := range clients {
		text, err := c.StatsText(StatsPrometheus)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "redlock_master_queued_requests{") && !strings.HasSuffix(line, "} 0") {
				return false
			}
		}
	}
	return true
}

// subscribedEverywhere: every master has n channels matching pattern.
func subscribedEverywhere(t *testing.T, pattern string, n int) bool {
	t.Helper()
	want := "*" + strconv.Itoa(n)
	for _, m := range masters {
		if v, err := redisCmd(m.port, "PUBSUB", "CHANNELS", pattern); err != nil || v != want {
			return false
		}
	}
	return true
}

func assertAbsent(t *testing.T, key string) {
	t.Helper()
	for i, v := range onAll(t, "EXISTS", key) {
		if v != "0" {
			t.Fatalf("%s left on master %d", key, i)
		}
	}
}

// A wait on a held lock, canceled: it ends at once, unsubscribes from the
// release notices, sends nothing more, and does not take the holder's
// release.
func TestCancelWaitSendsNothing(t *testing.T) {
	const res = "go:cancel:wait"
	a := open(t)
	// It waits by release notices; its fallback retry is far beyond the test.
	w := open(t, WithRetry(-1, 10*time.Second, 0))
	held, err := a.Lock(bg, res, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		l, err := w.LockWait(ctx, res, 30*time.Second, time.Minute)
		if l != nil {
			l.Unlock(bg)
		}
		done <- err
	}()
	waitUntil(t, "the waiter subscribed on every master", 5*time.Second,
		func() bool { return subscribedEverywhere(t, "*"+res+"*", 1) })
	waitUntil(t, "the clients idle", 5*time.Second, func() bool { return idle(t, a, w) })
	base := counts(t, lockCommands)
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the canceled wait did not end")
	}
	t.Logf("canceled wait ended in %v", time.Since(t0))
	waitUntil(t, "the waiter unsubscribed everywhere", 5*time.Second,
		func() bool { return subscribedEverywhere(t, "*"+res+"*", 0) })
	assertQuiet(t, "canceled wait", base, lockCommands)
	for i, v := range onAll(t, "GET", res) {
		if v != held.Value {
			t.Fatalf("holder's key on master %d: %q", i, v)
		}
	}
	// A waiter still waiting would be woken by the release and SET at once.
	sets := counts(t, setCalls)
	if err := held.Unlock(bg); err != nil {
		t.Fatal(err)
	}
	assertQuiet(t, "after the holder's release", sets, setCalls)
	assertAbsent(t, res)
}

// LockMany, canceled while it retries: nothing more after the round that
// was out at the cancel, and no key left (a partial SET is released).
func TestCancelLockMany(t *testing.T) {
	const ra, rb = "go:cancel:many:a", "go:cancel:many:b"
	a := open(t)
	m := open(t, WithRetry(-1, 50*time.Millisecond, 0)) // an attempt every 50 ms, without end
	held, err := a.Lock(bg, rb, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(bg)
	base := counts(t, lockCommands)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		l, err := m.LockMany(ctx, []string{ra, rb}, 30*time.Second)
		if l != nil {
			l.Unlock(bg)
		}
		done <- err
	}()
	waitUntil(t, "a few attempts on every master", 5*time.Second, func() bool {
		for i, n := range counts(t, lockCommands) {
			if n < base[i]+3 {
				return false
			}
		}
		return true
	})
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the canceled LockMany did not end")
	}
	// The round out at the cancel ends by itself, and what it set is released.
	waitUntil(t, "the clients idle", 5*time.Second, func() bool { return idle(t, a, m) })
	assertQuiet(t, "canceled lock_many", counts(t, lockCommands), lockCommands)
	assertAbsent(t, ra)
	for i, v := range onAll(t, "GET", rb) {
		if v != held.Value {
			t.Fatalf("holder's key on master %d: %q", i, v)
		}
	}
}

// TryLock, Extend and Unlock are one round each: with two masters stopped
// (their requests unread, the request timeout long), each returns ctx's
// error when ctx is done, and the round ends in the background once they
// run: TryLock's late grant is released, Unlock's release is done.
func TestContextBoundsOneRound(t *testing.T) {
	const res = "go:ctx:round"
	c := open(t, WithTimeouts(time.Second, 5*time.Second))
	l, err := c.Lock(bg, res, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(bg, 100*time.Millisecond) }
	stopped := false
	stop := func() { pause(0); pause(1); stopped = true }
	run := func() { resume(0); resume(1); stopped = false }
	defer func() {
		if stopped {
			run()
		}
	}()

	stop()
	ctx, cancel := short()
	t0 := time.Now()
	err = l.Extend(ctx, 30*time.Second)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 2*time.Second {
		t.Fatalf("Extend: %v after %v", err, time.Since(t0))
	}
	ctx, cancel = short()
	_, err = c.TryLock(ctx, "go:ctx:round:try", 30*time.Second)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock: %v", err)
	}
	ctx, cancel = short()
	err = l.Unlock(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !l.Released() {
		t.Fatalf("Unlock: %v, released %v", err, l.Released())
	}
	run()
	// The TryLock's round wins once the masters read it; nobody owns it, so
	// it is released.  Unlock's release goes through.
	waitUntil(t, "no key left", 10*time.Second, func() bool {
		for _, k := range []string{res, "go:ctx:round:try"} {
			for _, v := range onAll(t, "EXISTS", k) {
				if v != "0" {
					return false
				}
			}
		}
		return true
	})
	// A ctx done before the call: nothing is sent (the release of Unlock
	// excepted, which always goes).
	done, cancelDone := context.WithCancel(bg)
	cancelDone()
	if _, err := c.TryLock(done, res, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("TryLock with a done ctx: %v", err)
	}
	l2, err := c.Lock(bg, res, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Extend(done, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend with a done ctx: %v", err)
	}
	if err := l2.Unlock(done); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Unlock with a done ctx: %v", err)
	}
	waitUntil(t, "the release sent by an Unlock with a done ctx", 5*time.Second, func() bool {
		for _, v := range onAll(t, "EXISTS", res) {
			if v != "0" {
				return false
			}
		}
		return true
	})
}

// Elect's ctx is the campaign's: when it is done the election resigns (its
// channels close) and another campaigner takes over at once.
func TestElectContextResigns(t *testing.T) {
	const name = "go:leader:ctx"
	a, b := open(t), open(t)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	ea, err := a.Elect(ctx, name, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ea.Elected:
	case <-time.After(5 * time.Second):
		t.Fatal("not elected")
	}
	eb, err := b.Elect(bg, name, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Resign()
	cancel()
	select {
	case _, ok := <-ea.Elected:
		if ok {
			t.Fatal("a second term after the ctx was done")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Elected not closed when ctx was done")
	}
	// Woken by the release: well before the 30 s lease would have expired.
	select {
	case <-eb.Elected:
	case <-time.After(5 * time.Second):
		t.Fatal("no hand-over after the ctx resigned")
	}
	done, cancelDone := context.WithCancel(bg)
	cancelDone()
	if _, err := a.Elect(done, name, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Elect with a done ctx: %v", err)
	}
}

// A call its ctx ended says which call and resource, and still matches
// context.DeadlineExceeded / context.Canceled.
func TestContextErrorNamesCall(t *testing.T) {
	a, b := open(t), open(t)
	held, err := a.Lock(bg, "go:ctxwrap", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(bg)
	check := func(err error, want string, cause error) {
		t.Helper()
		var re *Error
		if err == nil || err.Error() != want || !errors.Is(err, cause) || !errors.As(err, &re) {
			t.Fatalf("got %v, want %q (%v)", err, want, cause)
		}
		if re.Timeout() != (cause == context.DeadlineExceeded) {
			t.Fatalf("%v: Timeout() %v", err, re.Timeout())
		}
	}
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	_, err = b.LockWait(ctx, "go:ctxwrap", time.Second, 30*time.Second)
	cancel()
	check(err, `redlock: lock_wait "go:ctxwrap": context deadline exceeded`, context.DeadlineExceeded)
	done, cancelDone := context.WithCancel(bg)
	cancelDone()
	_, err = b.Lock(done, "go:ctxwrap", time.Second)
	check(err, `redlock: lock "go:ctxwrap": context canceled`, context.Canceled)
	_, err = b.TryLock(done, "go:ctxwrap", time.Second)
	check(err, `redlock: trylock "go:ctxwrap": context canceled`, context.Canceled)
	check(held.Extend(done, time.Second), `redlock: extend "go:ctxwrap": context canceled`, context.Canceled)
}
