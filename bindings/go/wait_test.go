package redlock

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A waited acquisition whose wait ran out while too few masters answered
// fails with ErrNoQuorum (an outage), not ErrTimeout, which stays for a
// resource still held by another: a program that skips on busy does not
// hide the outage.
func TestWaitEndsNoQuorumVsHeld(t *testing.T) {
	a := open(t)
	b := open(t, WithTimeouts(time.Second, 50*time.Millisecond))
	const wait = 300 * time.Millisecond

	held, err := a.Lock(bg, "go:wait:held", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(bg)
	_, err = b.LockWait(bg, "go:wait:held", time.Second, wait)
	var re *Error
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrNoQuorum) || !errors.As(err, &re) ||
		re.Op != "lock_wait" || !re.Timeout() {
		t.Fatalf("held: want ErrTimeout, got %v", err)
	}

	pause(0)
	pause(1)
	defer func() { resume(0); resume(1) }()
	check := func(op string, err error) {
		t.Helper()
		var re *Error
		if !errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrTimeout) || !errors.As(err, &re) || re.Op != op {
			t.Fatalf("%s, masters down: want ErrNoQuorum, got %v", op, err)
		}
		if re.Timeout() || !strings.Contains(err.Error(), "no quorum") {
			t.Fatalf("%s: %v (Timeout %v)", op, err, re.Timeout())
		}
	}
	_, err = b.LockWait(bg, "go:wait:down", time.Second, wait)
	check("lock_wait", err)
	_, err = b.Semaphore(bg, "go:wait:sem", 2, time.Second, wait)
	check("semaphore", err)
	_, err = b.RWLockWrite(bg, "go:wait:rw", time.Second, wait)
	check("rwlock_write", err)
}
