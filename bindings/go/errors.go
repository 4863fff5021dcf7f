package redlock

// #include <stdlib.h>
// #include <redlock.h>
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Errno is an error code of the C library (REDLOCK_E*, always negative).
// Like syscall.Errno, it is comparable and works with errors.Is:
//
//	if errors.Is(err, redlock.ErrLocked) { ... }
type Errno int

// The library's error codes (include/redlock.h; the values, -1 .. -13, are
// part of its ABI).  Taken from the header at compile time, so they cannot
// drift from it; TestConstantsMatchLibrary checks them against the library
// loaded at run time.
const (
	EINVAL      Errno = C.REDLOCK_EINVAL      // invalid argument
	ENOMEM      Errno = C.REDLOCK_ENOMEM      // out of memory
	ELOCKED     Errno = C.REDLOCK_ELOCKED     // held by another holder on a quorum of masters
	ENOQUORUM   Errno = C.REDLOCK_ENOQUORUM   // too few masters answered
	EEXPIRED    Errno = C.REDLOCK_EEXPIRED    // quorum won but no validity left
	ELOST       Errno = C.REDLOCK_ELOST       // the lock is no longer held on a quorum
	ETIMEDOUT   Errno = C.REDLOCK_ETIMEDOUT   // wait budget spent, still held by another
	ECANCELED   Errno = C.REDLOCK_ECANCELED   // canceled (the client was closed during the call)
	ECLOSED     Errno = C.REDLOCK_ECLOSED     // client is closing or closed
	EWOULDBLOCK Errno = C.REDLOCK_EWOULDBLOCK // blocking call on the client's loop thread
	EIO         Errno = C.REDLOCK_EIO         // I/O or system error
	ENOTSUP     Errno = C.REDLOCK_ENOTSUP     // not supported by this build or these masters
	EFORKED     Errno = C.REDLOCK_EFORKED     // client used in a forked child
)

// ErrorInfo is one entry of the library's error table.
type ErrorInfo struct {
	Code    Errno
	Name    string // "REDLOCK_ELOCKED"
	Message string
}

// ErrorTable returns the error table of the library loaded at run time
// (redlock_err_count / redlock_err_code), in its order.  A newer library may
// have codes this package has no constant for; they still work as Errno.
func ErrorTable() []ErrorInfo {
	n := int(C.redlock_err_count())
	table := make([]ErrorInfo, 0, n)
	for i := 0; i < n; i++ {
		e := Errno(C.redlock_err_code(C.int(i)))
		table = append(table, ErrorInfo{Code: e, Name: e.Name(), Message: e.Error()})
	}
	return table
}

// libConstant is a redlock.h integer constant as the loaded library has it.
func libConstant(name string) (int64, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var v C.int64_t
	if C.redlock_constant(cs, &v) != 0 {
		return 0, false
	}
	return int64(v), true
}

// libConstantString is a redlock.h string constant as the loaded library has it.
func libConstantString(name string) (string, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	p := C.redlock_constant_string(cs)
	if p == nil {
		return "", false
	}
	return C.GoString(p), true
}

// Sentinel errors for errors.Is.  Every error the package returns for a
// library failure is an *Error wrapping one of these.
var (
	ErrInvalid    error = EINVAL
	ErrNoMemory   error = ENOMEM
	ErrLocked     error = ELOCKED
	ErrNoQuorum   error = ENOQUORUM
	ErrExpired    error = EEXPIRED
	ErrLost       error = ELOST
	ErrTimeout    error = ETIMEDOUT
	ErrCanceled   error = ECANCELED
	ErrClosed     error = ECLOSED
	ErrWouldBlock error = EWOULDBLOCK
	ErrIO         error = EIO
	ErrNotSup     error = ENOTSUP
	ErrForked     error = EFORKED
)

// LostMaxHold is the C library's lost reason of a bounded hold that reached
// its bound (REDLOCK_LOST_MAX_HOLD, positive: never an error code).  The
// package reports it as an error wrapping ErrMaxHold (WatchBounded,
// ElectBounded).
const LostMaxHold = C.REDLOCK_LOST_MAX_HOLD

// ErrMaxHold: a bounded hold (Lock.WatchBounded, Client.ElectBounded)
// reached its bound and the library released it on purpose, as asked.  Not
// a failure: errors.Is(err, ErrMaxHold) tells it from ErrLost.
var ErrMaxHold = errors.New("the hold reached its bound (max hold): released on purpose")

// lostErr is the error a lost callback's reason stands for: ErrMaxHold for
// LostMaxHold, else the library's code (ELOST when it gave none).
func lostErr(op, resource string, reason int) error {
	switch {
	case reason == LostMaxHold:
		return &Error{Op: op, Resource: resource, Err: ErrMaxHold}
	case reason == 0:
		reason = int(ELOST)
	}
	return &Error{Op: op, Resource: resource, Errno: Errno(reason)}
}

// Error returns the library's message (redlock_strerror).
func (e Errno) Error() string { return C.GoString(C.redlock_strerror(C.int(e))) }

// Name returns the code's name, e.g. "REDLOCK_ELOCKED" (redlock_err_name).
func (e Errno) Name() string { return C.GoString(C.redlock_err_name(C.int(e))) }

// Timeout reports whether the error is a timeout: a wait budget that ran out.
func (e Errno) Timeout() bool { return e == ETIMEDOUT }

// Temporary reports whether trying again later may succeed: the resource was
// held, too few masters answered, or the wait ran out.
func (e Errno) Temporary() bool {
	return e == ELOCKED || e == ENOQUORUM || e == ETIMEDOUT || e == EEXPIRED
}

// Error is a failed call: the operation, the resource and the library code.
type Error struct {
	Op       string // "lock", "trylock", "lock_wait", "lock_many", "extend", "unlock", "watch", "semaphore", "rwlock_read", "rwlock_write", "elect", "resign", "inspect", "revoke", "stats", "open", "option"
	Resource string // empty when not about one resource
	Errno    Errno
	// Votes: for a failed acquisition, extension or unlock whose round was
	// decided (ErrLocked, ErrNoQuorum, ErrExpired, ErrLost, ErrTimeout), the
	// one-line summary of that call's own round (redlock_last_votes, read
	// when the call completed: in the library's callback, or on the OS
	// thread that made the blocking call, so a goroutine that moves between
	// threads still gets its own call's); "" otherwise.  Diagnostics: do not
	// parse it.
	Votes string
	// Detail: why an argument was refused, when the binding knows
	// (e.g. a TTL above the max TTL); "" otherwise.
	Detail string
	// Err: when the call's ctx ended it, ctx.Err() (context.Canceled or
	// context.DeadlineExceeded, which errors.Is finds through the *Error);
	// for a bounded hold that reached its bound, ErrMaxHold.  Errno is then 0.
	Err error
}

// ctxErr is the error of a call that its ctx ended: the operation and the
// resource, wrapping ctx.Err().
func ctxErr(op, resource string, err error) error {
	return &Error{Op: op, Resource: resource, Err: err}
}

// Error is "redlock: OP "RESOURCE": MESSAGE", followed by ": VOTES" when the
// votes explain the failure: no quorum, or a master in quarantine (how long
// it has left).  Otherwise the votes stay in Votes, to keep the line short.
func (e *Error) Error() string {
	var s, msg string
	if e.Err != nil {
		msg = e.Err.Error()
	} else {
		msg = e.Errno.Error()
	}
	if e.Resource != "" {
		s = fmt.Sprintf("redlock: %s %q: %s", e.Op, e.Resource, msg)
	} else {
		s = fmt.Sprintf("redlock: %s: %s", e.Op, msg)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if votesExplain(e.Errno, e.Votes) {
		s += ": " + e.Votes
	}
	return s
}

// votesExplain: the votes are the reason of a no-quorum failure, and a
// quarantined master is what a program against freshly started masters
// must be told about.
func votesExplain(e Errno, votes string) bool {
	return votes != "" && (e == ENOQUORUM || strings.Contains(votes, "=quarantined"))
}

// roundErrno reports whether the library returns rc only after a decided
// round: the calls' errors that carry votes.
func roundErrno(rc C.int) bool {
	switch Errno(rc) {
	case ELOCKED, ENOQUORUM, EEXPIRED, ELOST, ETIMEDOUT:
		return true
	}
	return false
}

// Unwrap makes errors.Is(err, redlock.ErrLocked) and errors.As(err, &errno)
// work, and errors.Is(err, context.Canceled) for a call its ctx ended.
func (e *Error) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return e.Errno
}

// Timeout reports whether the wait budget ran out (ETIMEDOUT) or the ctx's
// deadline passed.
func (e *Error) Timeout() bool {
	return e.Errno.Timeout() || (e.Err != nil && errors.Is(e.Err, context.DeadlineExceeded))
}

// Temporary: see Errno.Temporary.
func (e *Error) Temporary() bool { return e.Errno.Temporary() }

func mkerr(op, resource string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return &Error{Op: op, Resource: resource, Errno: Errno(rc)}
}

// roundCall runs a blocking C call and, when it fails after a decided
// round, reads that round's votes on the same OS thread (the library keeps
// them per calling thread; the goroutine is wired to its thread meanwhile).
func roundCall(c *C.redlock_t, call func() C.int) (C.int, string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := call()
	if !roundErrno(rc) {
		return rc, ""
	}
	return rc, lastVotesOf(c)
}

func roundErr(op, resource string, rc C.int, votes string) error {
	if rc == 0 {
		return nil
	}
	return &Error{Op: op, Resource: resource, Errno: Errno(rc), Votes: votes}
}
