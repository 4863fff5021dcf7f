package redlock

// #include <redlock.h>
import "C"

import "fmt"

// Errno is an error code of the C library (REDLOCK_E*, always negative).
// Like syscall.Errno, it is comparable and works with errors.Is:
//
//	if errors.Is(err, redlock.ErrLocked) { ... }
type Errno int

// The library's error codes (include/redlock.h; the values are part of its ABI).
const (
	EINVAL      Errno = -1  // invalid argument
	ENOMEM      Errno = -2  // out of memory
	ELOCKED     Errno = -3  // held by another holder on a quorum of masters
	ENOQUORUM   Errno = -4  // too few masters answered
	EEXPIRED    Errno = -5  // quorum won but no validity left
	ELOST       Errno = -6  // the lock is no longer held on a quorum
	ETIMEDOUT   Errno = -7  // wait budget spent
	ECANCELED   Errno = -8  // canceled (the client was closed during the call)
	ECLOSED     Errno = -9  // client is closing or closed
	EWOULDBLOCK Errno = -10 // blocking call on the client's loop thread
	EIO         Errno = -11 // I/O or system error
	ENOTSUP     Errno = -12 // not supported by this build
	EFORKED     Errno = -13 // client used in a forked child
)

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
	Op       string // "lock", "trylock", "lock_wait", "lock_many", "extend", "unlock", "watch", "semaphore", "rwlock_read", "rwlock_write", "elect", "resign", "stats", "open", "option"
	Resource string // empty when not about one resource
	Errno    Errno
}

func (e *Error) Error() string {
	if e.Resource != "" {
		return fmt.Sprintf("redlock: %s %q: %s", e.Op, e.Resource, e.Errno.Error())
	}
	return fmt.Sprintf("redlock: %s: %s", e.Op, e.Errno.Error())
}

// Unwrap makes errors.Is(err, redlock.ErrLocked) and errors.As(err, &errno) work.
func (e *Error) Unwrap() error { return e.Errno }

// Timeout reports whether the wait budget ran out (ETIMEDOUT).
func (e *Error) Timeout() bool { return e.Errno.Timeout() }

// Temporary: see Errno.Temporary.
func (e *Error) Temporary() bool { return e.Errno.Temporary() }

func mkerr(op, resource string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return &Error{Op: op, Resource: resource, Errno: Errno(rc)}
}
