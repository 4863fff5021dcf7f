// Package redlocktest gives tests fake Redis masters in their own process:
// no redis-server, and no port unless asked for (the test kit of
// libredlock, include/redlock_testing.h).  Each fake answers what the
// library sends as Redis does; its nodes are ordinary URIs for
// redlock.Open, and faults come on cue.
//
//	func TestWorker(t *testing.T) {
//		fakes := redlocktest.Start(t, 3)
//		a, _ := redlock.Open(fakes.Nodes, redlock.WithQuarantine(false))
//		defer a.Close()
//		...
//		fakes.Kill(0)
//		fakes.Kill(1) // now a lock fails with redlock.ErrNoQuorum
//	}
//
// Start stops the fakes when the test ends (t.Cleanup); New is the same
// for code without a testing.TB.  Every method returns once the fault is in
// effect, and an error wrapping redlock.ErrInvalid on misuse (an index out
// of range, a negative duration, a fault on a killed master), which
// Start's masters also report to their test (t.Fatal).  Restarted masters
// are up 0 s: open clients with redlock.WithQuarantine(false), or the
// restart quarantine keeps them out for the max TTL, as it would real ones.
package redlocktest

// #include <stdlib.h>
// #include <redlock_testing.h>
import "C"

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"redlock-c.invalid/redlock"
)

// Mode is how a fake answers: Normal (as Redis), Grant (every acquisition,
// extension and release succeeds) or Refuse (every acquisition and
// extension is refused as if another held the key).
type Mode int

const (
	Normal Mode = C.REDLOCK_TESTING_NORMAL
	Grant  Mode = C.REDLOCK_TESTING_GRANT
	Refuse Mode = C.REDLOCK_TESTING_REFUSE
)

// All names every master in SetMode.
const All = -1

// Options of New / Start.
type Options struct {
	TCP         bool // listen on 127.0.0.1 ports instead of Unix sockets
	VirtualTime bool // the fakes' clocks move only with Advance
}

// Masters is a set of fake masters.
type Masters struct {
	kit   *C.redlock_testing_t
	tb    testing.TB // nil: New's; faults return errors only
	Nodes []string   // the masters' URIs, for redlock.Open
}

// New starts n fake masters (1..16).  Call Stop when done.
func New(n int, opts ...Options) (*Masters, error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if n < 1 || n > C.REDLOCK_TESTING_MAX {
		return nil, &redlock.Error{Op: "redlocktest", Errno: redlock.EINVAL}
	}
	flags := C.uint(0)
	if o.TCP {
		flags |= C.REDLOCK_TESTING_TCP
	}
	if o.VirtualTime {
		flags |= C.REDLOCK_TESTING_VIRTUAL_TIME
	}
	var kit *C.redlock_testing_t
	if rc := C.redlock_testing_start(C.uint(n), flags, &kit); rc != 0 {
		return nil, &redlock.Error{Op: "redlocktest", Errno: redlock.Errno(rc)}
	}
	m := &Masters{kit: kit}
	for i := 0; i < n; i++ {
		m.Nodes = append(m.Nodes, C.GoString(C.redlock_testing_uri(kit, C.uint(i))))
	}
	return m, nil
}

// Start starts n fake masters for the test tb and stops them when it ends;
// a fault that cannot be done fails the test.
func Start(tb testing.TB, n int, opts ...Options) *Masters {
	tb.Helper()
	m, err := New(n, opts...)
	if err != nil {
		tb.Fatalf("redlocktest.Start(%d): %v", n, err)
	}
	m.tb = tb
	tb.Cleanup(m.Stop)
	return m
}

// Stop stops every fake (clients still open see them go down).  Idempotent.
func (m *Masters) Stop() {
	if m.kit != nil {
		C.redlock_testing_stop(m.kit)
		m.kit = nil
	}
}

func (m *Masters) check(op string, i int, rc C.int) (int, error) {
	if rc >= 0 {
		return int(rc), nil
	}
	err := fmt.Errorf("redlocktest: %s(%d): %w (index 0..%d, and a master that is up)", op, i,
		&redlock.Error{Op: "redlocktest", Errno: redlock.Errno(rc)}, len(m.Nodes)-1)
	if m.tb != nil {
		m.tb.Helper()
		m.tb.Fatal(err)
	}
	return 0, err
}

func (m *Masters) index(i int) C.uint {
	if m.kit == nil || i < 0 {
		return C.uint(1 << 30) // refused by the kit as out of range
	}
	return C.uint(i)
}

func (m *Masters) live() *C.redlock_testing_t { return m.kit }

// ms is d in whole milliseconds, rounded up (a positive d never becomes 0,
// which would turn a delay off); ok is false for a negative d.
func ms(d time.Duration) (C.uint64_t, bool) {
	if d < 0 {
		return 0, false
	}
	return C.uint64_t((d + time.Millisecond - 1) / time.Millisecond), true
}

func (m *Masters) badDuration(op string, i int, d time.Duration) error {
	err := fmt.Errorf("redlocktest: %s(%d, %v): %w (a duration >= 0)", op, i, d,
		&redlock.Error{Op: "redlocktest", Errno: redlock.EINVAL})
	if m.tb != nil {
		m.tb.Helper()
		m.tb.Fatal(err)
	}
	return err
}

func cstr(s string) (*C.char, func()) {
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// Kill: master i dies (its connections close, its keys are lost) until Restart.
func (m *Masters) Kill(i int) error {
	_, err := m.check("Kill", i, C.redlock_testing_kill(m.live(), m.index(i)))
	return err
}

// Restart: master i comes back empty, with a new run_id and uptime 0.
func (m *Masters) Restart(i int) error {
	_, err := m.check("Restart", i, C.redlock_testing_restart(m.live(), m.index(i)))
	return err
}

// Pause (SIGSTOP): master i reads and answers nothing until Resume.
func (m *Masters) Pause(i int) error {
	_, err := m.check("Pause", i, C.redlock_testing_pause(m.live(), m.index(i)))
	return err
}

// Resume (SIGCONT): master i runs what waited, in order.
func (m *Masters) Resume(i int) error {
	_, err := m.check("Resume", i, C.redlock_testing_resume(m.live(), m.index(i)))
	return err
}

// Slow: every reply of master i comes d late (0: on time again).
func (m *Masters) Slow(i int, d time.Duration) error {
	v, ok := ms(d)
	if !ok {
		return m.badDuration("Slow", i, d)
	}
	if v > 0xffffffff {
		v = 0xffffffff
	}
	_, err := m.check("Slow", i, C.redlock_testing_slow(m.live(), m.index(i), C.uint32_t(v)))
	return err
}

// DropKey: master i loses key (the lock key is the key prefix + resource);
// true when it existed.
func (m *Masters) DropKey(i int, key string) (bool, error) {
	p, free := cstr(key)
	defer free()
	n, err := m.check("DropKey", i, C.redlock_testing_drop_key(m.live(), m.index(i), p))
	return n == 1, err
}

// ClockJump: master i's clock jumps forward by d: its keys expire that much sooner.
func (m *Masters) ClockJump(i int, d time.Duration) error {
	v, ok := ms(d)
	if !ok {
		return m.badDuration("ClockJump", i, d)
	}
	_, err := m.check("ClockJump", i, C.redlock_testing_clock_jump(m.live(), m.index(i), v))
	return err
}

// Failover: master i is replaced by its replica, lag behind: the keys
// written in the last lag are missing; clients' failover quarantine applies.
func (m *Masters) Failover(i int, lag time.Duration) error {
	v, ok := ms(lag)
	if !ok {
		return m.badDuration("Failover", i, lag)
	}
	_, err := m.check("Failover", i, C.redlock_testing_failover(m.live(), m.index(i), v))
	return err
}

// SetMode sets master i's mode (All: every master's).
func (m *Masters) SetMode(i int, mode Mode) error {
	idx := m.index(i)
	if i == All {
		idx = C.REDLOCK_TESTING_ALL
	}
	_, err := m.check("SetMode", i, C.redlock_testing_set_mode(m.live(), idx, C.redlock_testing_mode_t(mode)))
	return err
}

// Advance moves every fake's clock forward by d.
func (m *Masters) Advance(d time.Duration) error {
	v, ok := ms(d)
	if !ok {
		return m.badDuration("Advance", 0, d)
	}
	_, err := m.check("Advance", 0, C.redlock_testing_advance(m.live(), v))
	return err
}

// HasKey: whether master i holds key.
func (m *Masters) HasKey(i int, key string) (bool, error) {
	p, free := cstr(key)
	defer free()
	n, err := m.check("HasKey", i, C.redlock_testing_has_key(m.live(), m.index(i), p))
	return n == 1, err
}

// KeyCount: how many masters hold key.
func (m *Masters) KeyCount(key string) (int, error) {
	p, free := cstr(key)
	defer free()
	n, err := m.check("KeyCount", 0, C.redlock_testing_key_count(m.live(), p))
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Commands: how many commands master i ran since it (re)started.
func (m *Masters) Commands(i int) (int64, error) {
	n := C.redlock_testing_commands(m.live(), m.index(i))
	if n < 0 {
		_, err := m.check("Commands", i, C.int(n))
		return 0, err
	}
	return int64(n), nil
}
