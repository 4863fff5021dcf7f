// Package redlock is a Go (cgo) binding of redlock-c, a Redlock client: a
// distributed lock over N independent Redis masters, held when a majority of
// them accepted it and time is left on it.
//
// Build: the package links -lredlock and includes <redlock.h>.  After the
// project's install step (cmake --install, then ldconfig) nothing else is
// needed; for an uninstalled build directory set
//
//	CGO_CFLAGS=-I/path/to/redlock-c/include
//	CGO_LDFLAGS="-L/path/to/redlock-c/build -Wl,-rpath,/path/to/redlock-c/build"
//
// Threads: a *Client and its *Locks may be used from any number of
// goroutines.  The C library calls back on its own I/O thread; this package's
// callbacks there never block (they hand results to buffered channels), so a
// slow goroutine never stalls the library.
package redlock

/*
#cgo LDFLAGS: -lredlock
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Log levels for WithLogger.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// Limits of the C library.
const (
	MaxNodes       = 64
	MaxResourceLen = 1024
	MaxPrefixLen   = 256
	MaxMany        = 64
)

// Version returns the C library's version ("0.1.0").
func Version() string { return C.GoString(C.redlock_version()) }

// ---- options -------------------------------------------------------------------

// Option changes one setting of Open; settings not given keep the library's
// defaults (retry 3 times, 200 ms + up to 200 ms jitter; connect 1 s, request
// 100 ms; drift 0.01; max TTL 60 s; quarantine on; fencing off; prefix "").
type Option func(*config)

type config struct {
	retry           bool
	retryCount      int
	delay, jitter   time.Duration
	timeouts        bool
	connect, reqTmo time.Duration
	drift           *float64
	maxTTL          time.Duration
	quarantine      *bool
	fencing         *bool
	prefix          *string
	logger          func(level int, msg string)
	logLevel        int
}

// WithRetry: count extra attempts after the first (-1 unbounded, 0 one try),
// each after delay plus a random 0..jitter.
func WithRetry(count int, delay, jitter time.Duration) Option {
	return func(c *config) { c.retry, c.retryCount, c.delay, c.jitter = true, count, delay, jitter }
}

// WithTimeouts bounds connecting to a master and each round of requests.
func WithTimeouts(connect, request time.Duration) Option {
	return func(c *config) { c.timeouts, c.connect, c.reqTmo = true, connect, request }
}

// WithDriftFactor: 0 <= f < 0.5; ttl*f + 2 ms is taken off every validity.
func WithDriftFactor(f float64) Option { return func(c *config) { c.drift = &f } }

// WithMaxTTL: the largest TTL, and the length of the restart quarantine.
func WithMaxTTL(d time.Duration) Option { return func(c *config) { c.maxTTL = d } }

// WithQuarantine turns the restart quarantine on or off.  Tests that start
// fresh masters pass false (or a short WithMaxTTL).
func WithQuarantine(on bool) Option { return func(c *config) { c.quarantine = &on } }

// WithFencing turns fencing tokens on (Lock.Fence).
func WithFencing(on bool) Option { return func(c *config) { c.fencing = &on } }

// WithKeyPrefix: the Redis key is prefix + resource.
func WithKeyPrefix(p string) Option { return func(c *config) { c.prefix = &p } }

// WithLogger receives the library's log messages at minLevel and above.  fn
// runs on the library's I/O thread: keep it short and do not call blocking
// methods of the client from it.
func WithLogger(minLevel int, fn func(level int, msg string)) Option {
	return func(c *config) { c.logger, c.logLevel = fn, minLevel }
}

func ms(d time.Duration) (C.uint32_t, bool) {
	if d < 0 || d/time.Millisecond > 0xffffffff {
		return 0, false
	}
	return C.uint32_t(d / time.Millisecond), true
}

// ---- client --------------------------------------------------------------------

// Client is a Redlock client on N masters, with its own I/O thread.  Close it.
type Client struct {
	// mu: RLock around every C call that uses c or a lock handle; Lock in
	// Close, so the C client is never used after (or during) redlock_close.
	mu      sync.RWMutex
	c       *C.redlock_t
	closed  bool
	locks   map[*Lock]struct{} // held locks, invalidated by Close (under mu)
	lmu     sync.Mutex         // guards locks and closing
	closing bool
	logID   uintptr
}

// Open connects to the masters (redis://[[user]:password@]host[:port][/db] or
// unix:///path).  It returns within the connect timeout even when masters are
// down: they are retried in the background and vote "no" meanwhile.
func Open(nodes []string, opts ...Option) (*Client, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if len(nodes) == 0 {
		return nil, &Error{Op: "open", Errno: EINVAL}
	}
	o := C.redlock_options_new()
	if o == nil {
		return nil, &Error{Op: "open", Errno: ENOMEM}
	}
	defer C.redlock_options_free(o)
	for _, n := range nodes {
		cs := C.CString(n)
		rc := C.redlock_options_add_node(o, cs)
		C.free(unsafe.Pointer(cs))
		if rc != 0 {
			return nil, &Error{Op: "option", Resource: redact(n), Errno: Errno(rc)}
		}
	}
	set := func(what string, rc C.int) error { return mkerr("option", what, rc) }
	if cfg.retry {
		d, ok1 := ms(cfg.delay)
		j, ok2 := ms(cfg.jitter)
		if !ok1 || !ok2 || cfg.retryCount < -1 || cfg.retryCount > 1<<31-1 {
			return nil, &Error{Op: "option", Resource: "retry", Errno: EINVAL}
		}
		if err := set("retry", C.redlock_options_set_retry(o, C.int(cfg.retryCount), d, j)); err != nil {
			return nil, err
		}
	}
	if cfg.timeouts {
		a, ok1 := ms(cfg.connect)
		b, ok2 := ms(cfg.reqTmo)
		if !ok1 || !ok2 {
			return nil, &Error{Op: "option", Resource: "timeouts", Errno: EINVAL}
		}
		if err := set("timeouts", C.redlock_options_set_timeouts(o, a, b)); err != nil {
			return nil, err
		}
	}
	if cfg.drift != nil {
		if err := set("drift factor", C.redlock_options_set_drift_factor(o, C.double(*cfg.drift))); err != nil {
			return nil, err
		}
	}
	if cfg.maxTTL != 0 {
		m, ok := ms(cfg.maxTTL)
		if !ok {
			return nil, &Error{Op: "option", Resource: "max ttl", Errno: EINVAL}
		}
		if err := set("max ttl", C.redlock_options_set_max_ttl(o, m)); err != nil {
			return nil, err
		}
	}
	if cfg.quarantine != nil {
		C.redlock_options_set_quarantine(o, cbool(*cfg.quarantine))
	}
	if cfg.fencing != nil {
		C.redlock_options_set_fencing(o, cbool(*cfg.fencing))
	}
	if cfg.prefix != nil {
		cs := C.CString(*cfg.prefix)
		rc := C.redlock_options_set_key_prefix(o, cs)
		C.free(unsafe.Pointer(cs))
		if err := set("key prefix", rc); err != nil {
			return nil, err
		}
	}
	cl := &Client{locks: make(map[*Lock]struct{})}
	if cfg.logger != nil {
		cl.logID = registry.add(cfg.logger)
		if err := set("log", C.rlgo_set_log(o, C.int(cfg.logLevel), C.uintptr_t(cl.logID))); err != nil {
			registry.remove(cl.logID)
			return nil, err
		}
	}
	if rc := C.redlock_open(&cl.c, o); rc != 0 {
		if cl.logID != 0 {
			registry.remove(cl.logID)
		}
		return nil, mkerr("open", "", rc)
	}
	return cl, nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func redact(uri string) string {
	for i := 0; i+2 < len(uri); i++ {
		if uri[i] == '/' && uri[i+1] == '/' {
			for j := i + 2; j < len(uri) && uri[j] != '/'; j++ {
				if uri[j] == '@' {
					return uri[:i+2] + "***" + uri[j:]
				}
			}
			break
		}
	}
	return uri
}

// Close cancels calls still waiting (they return ErrCanceled), releases every
// lock still held (best effort; their *Lock values become released), and
// stops the I/O thread.  It waits for blocking calls already running
// (TryLock, LockMany, Extend, Unlock: each bounded by the request timeout and
// the retry policy).  Idempotent.
func (cl *Client) Close() error {
	cl.lmu.Lock()
	if cl.closing {
		cl.lmu.Unlock()
		cl.mu.Lock() // wait for the first Close to finish
		cl.mu.Unlock()
		return nil
	}
	cl.closing = true
	cl.lmu.Unlock()

	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.lmu.Lock()
	locks := cl.locks
	cl.locks = nil
	cl.lmu.Unlock()
	for l := range locks {
		l.mu.Lock()
		l.h = nil // redlock_close frees the handle
		l.mu.Unlock()
	}
	C.redlock_close(cl.c) // runs the pending callbacks (ECANCELED) before it returns
	cl.closed = true
	cl.c = nil
	for l := range locks {
		l.stopWatch()
	}
	if cl.logID != 0 {
		registry.remove(cl.logID)
	}
	return nil
}

// LastVotes is a one-line summary of the latest round (diagnostics; do not parse).
func (cl *Client) LastVotes() string {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if cl.closed {
		return ""
	}
	buf := make([]byte, 4096)
	n := C.redlock_last_votes(cl.c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	if n < 0 {
		return ""
	}
	if int(n) >= len(buf) {
		n = C.int(len(buf) - 1)
	}
	return string(buf[:n])
}

// ---- acquisition ---------------------------------------------------------------

func checkResource(op, r string) error {
	if len(r) == 0 || len(r) > MaxResourceLen {
		return &Error{Op: op, Resource: r, Errno: EINVAL}
	}
	for i := 0; i < len(r); i++ {
		if r[i] == 0 {
			return &Error{Op: op, Resource: r, Errno: EINVAL}
		}
	}
	return nil
}

func ttlArg(op, r string, ttl time.Duration) (C.uint32_t, error) {
	t, ok := ms(ttl)
	if !ok || t == 0 {
		return 0, &Error{Op: op, Resource: r, Errno: EINVAL}
	}
	return t, nil
}

// Lock acquires resource, retrying by the client's retry policy.  ctx cancels
// the call: Lock then returns ctx.Err() at once, and a lock granted afterwards
// is released in the background.
func (cl *Client) Lock(ctx context.Context, resource string, ttl time.Duration) (*Lock, error) {
	return cl.lockAsync(ctx, "lock", resource, ttl, 0)
}

// LockWait acquires resource, waiting up to wait for the holder to release it
// (woken by the release; ErrTimeout when wait runs out).  ctx cancels as in Lock.
func (cl *Client) LockWait(ctx context.Context, resource string, ttl, wait time.Duration) (*Lock, error) {
	w, ok := ms(wait)
	if !ok || w == 0 {
		return nil, &Error{Op: "lock_wait", Resource: resource, Errno: EINVAL}
	}
	return cl.lockAsync(ctx, "lock_wait", resource, ttl, w)
}

type lockResult struct {
	rc C.int
	h  *C.redlock_lock_t
}

// pendingLock is the registry entry of one redlock_lock_async call.
type pendingLock struct {
	mu        sync.Mutex
	ch        chan lockResult // buffered(1): the callback never blocks
	abandoned bool
	client    *C.redlock_t
}

func (cl *Client) lockAsync(ctx context.Context, op, resource string, ttl time.Duration, wait C.uint32_t) (*Lock, error) {
	if err := checkResource(op, resource); err != nil {
		return nil, err
	}
	t, err := ttlArg(op, resource, ttl)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &pendingLock{ch: make(chan lockResult, 1)}
	cs := C.CString(resource)
	defer C.free(unsafe.Pointer(cs))

	cl.mu.RLock()
	if cl.closed || cl.c == nil {
		cl.mu.RUnlock()
		return nil, &Error{Op: op, Resource: resource, Errno: ECLOSED}
	}
	p.client = cl.c
	id := registry.add(p)
	rc := C.rlgo_lock_async(cl.c, cs, t, wait, C.uintptr_t(id))
	cl.mu.RUnlock()
	if rc != 0 {
		registry.remove(id)
		return nil, mkerr(op, resource, rc)
	}
	select {
	case r := <-p.ch:
		if r.rc != 0 {
			return nil, mkerr(op, resource, r.rc)
		}
		return cl.adopt(op, r.h, []string{resource})
	case <-ctx.Done():
		p.mu.Lock()
		p.abandoned = true
		var late *C.redlock_lock_t
		select {
		case r := <-p.ch: // granted meanwhile: give it back
			if r.rc == 0 {
				late = r.h
			}
		default: // the callback will see abandoned and release a grant itself
		}
		p.mu.Unlock()
		// Not under p.mu: Close holds cl.mu while the I/O thread may need p.mu.
		if late != nil {
			cl.mu.RLock()
			if !cl.closed {
				C.rlgo_unlock_async_quiet(cl.c, late)
			}
			cl.mu.RUnlock()
		}
		return nil, ctx.Err()
	}
}

// TryLock makes one attempt (ErrLocked when another holder has a quorum).
func (cl *Client) TryLock(resource string, ttl time.Duration) (*Lock, error) {
	if err := checkResource("trylock", resource); err != nil {
		return nil, err
	}
	t, err := ttlArg("trylock", resource, ttl)
	if err != nil {
		return nil, err
	}
	cs := C.CString(resource)
	defer C.free(unsafe.Pointer(cs))
	var h *C.redlock_lock_t
	cl.mu.RLock()
	if cl.closed {
		cl.mu.RUnlock()
		return nil, &Error{Op: "trylock", Resource: resource, Errno: ECLOSED}
	}
	rc := C.redlock_trylock(cl.c, cs, t, &h)
	cl.mu.RUnlock()
	if rc != 0 {
		return nil, mkerr("trylock", resource, rc)
	}
	return cl.adopt("trylock", h, []string{resource})
}

// LockMany takes all resources (1..64, distinct) or none, as one Lock,
// retrying by the retry policy.  The C call has no cancellation: when ctx is
// done first, LockMany returns ctx.Err() and a lock granted later is released.
func (cl *Client) LockMany(ctx context.Context, resources []string, ttl time.Duration) (*Lock, error) {
	if len(resources) == 0 || len(resources) > MaxMany {
		return nil, &Error{Op: "lock_many", Errno: EINVAL}
	}
	for _, r := range resources {
		if err := checkResource("lock_many", r); err != nil {
			return nil, err
		}
	}
	t, err := ttlArg("lock_many", resources[0], ttl)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := append([]string(nil), resources...)
	type result struct {
		l   *Lock
		err error
	}
	done := make(chan result, 1)
	abandon := make(chan struct{})
	go func() {
		// C memory for the array: cgo forbids passing Go memory holding pointers.
		arr := (*[MaxMany]*C.char)(C.malloc(C.size_t(len(res)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		for i, r := range res {
			arr[i] = C.CString(r)
		}
		defer func() {
			for i := range res {
				C.free(unsafe.Pointer(arr[i]))
			}
			C.free(unsafe.Pointer(arr))
		}()
		var h *C.redlock_lock_t
		cl.mu.RLock()
		if cl.closed {
			cl.mu.RUnlock()
			done <- result{nil, &Error{Op: "lock_many", Resource: res[0], Errno: ECLOSED}}
			return
		}
		rc := C.redlock_lock_many(cl.c, &arr[0], C.size_t(len(res)), t, &h)
		if rc == 0 {
			select {
			case <-abandon: // the caller is gone: give the lock back at once
				C.redlock_unlock_async(cl.c, h, nil, nil)
				cl.mu.RUnlock()
				done <- result{nil, context.Canceled}
				return
			default:
			}
		}
		cl.mu.RUnlock()
		if rc != 0 {
			done <- result{nil, mkerr("lock_many", res[0], rc)}
			return
		}
		l, err := cl.adopt("lock_many", h, res)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.l, r.err
	case <-ctx.Done():
		close(abandon)
		go func() { // the worker always sends once; a lock that raced with the cancellation goes back
			if r := <-done; r.l != nil {
				r.l.Unlock()
			}
		}()
		return nil, ctx.Err()
	}
}

// adopt wraps a granted handle, unless the client is closing (its close frees it).
func (cl *Client) adopt(op string, h *C.redlock_lock_t, resources []string) (*Lock, error) {
	l := &Lock{
		cl:        cl,
		h:         h,
		Resource:  C.GoString(C.redlock_lock_resource(h)),
		Resources: resources,
		Value:     C.GoString(C.redlock_lock_value(h)),
		Fence:     uint64(C.redlock_lock_fence(h)),
	}
	cl.lmu.Lock()
	defer cl.lmu.Unlock()
	if cl.closing {
		return nil, &Error{Op: op, Resource: resources[0], Errno: ECANCELED}
	}
	cl.locks[l] = struct{}{}
	return l, nil
}

// ---- Lock ----------------------------------------------------------------------

// Lock is one held lock.  Its methods may be called from any goroutine.
type Lock struct {
	cl *Client
	// mu: RLock for calls that use h; Lock to release it (Unlock, Close).
	mu sync.RWMutex
	h  *C.redlock_lock_t // nil once released

	// Set at acquisition, readable after release.
	Resource  string   // the (first) resource, without the key prefix
	Resources []string // every resource (LockMany)
	Value     string   // the random value stored in Redis (32 hex digits)
	Fence     uint64   // fencing token; 0 without WithFencing(true)

	wmu      sync.Mutex
	watchID  uintptr
	lostCh   chan error
	lostOnce sync.Once
	lost     bool
}

// Released reports whether Unlock was called or the client closed.
func (l *Lock) Released() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.h == nil
}

// Validity is the local estimate of the time left (<= 0 once expired, 0 once released).
func (l *Lock) Validity() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.h == nil {
		return 0
	}
	return time.Duration(C.redlock_lock_validity_ms(l.h)) * time.Millisecond
}

// Lost reports whether the lock is known lost (watch, failed extension) or expired.
func (l *Lock) Lost() bool {
	l.wmu.Lock()
	lost := l.lost
	l.wmu.Unlock()
	if lost {
		return true
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.h != nil && C.redlock_lock_is_lost(l.h) != 0
}

func (l *Lock) live(op string) error {
	if l.h == nil {
		l.cl.lmu.Lock()
		closing := l.cl.closing
		l.cl.lmu.Unlock()
		if closing {
			return &Error{Op: op, Resource: l.Resource, Errno: ECLOSED}
		}
		return &Error{Op: op, Resource: l.Resource, Errno: EINVAL}
	}
	return nil
}

// Extend sets the lock's TTL to ttl from now on a quorum.  ErrLost when it
// is lost or its validity has run out.
func (l *Lock) Extend(ttl time.Duration) error {
	t, err := ttlArg("extend", l.Resource, ttl)
	if err != nil {
		return err
	}
	l.cl.mu.RLock()
	defer l.cl.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.live("extend"); err != nil {
		return err
	}
	return mkerr("extend", l.Resource, C.redlock_extend(l.cl.c, l.h, t))
}

// Unlock releases the lock on every master.  The Lock is released even when
// it returns an error (ErrLost, ErrNoQuorum).  A second Unlock returns nil.
func (l *Lock) Unlock() error {
	l.cl.mu.RLock()
	defer l.cl.mu.RUnlock()
	l.mu.Lock()
	h := l.h
	l.h = nil
	l.mu.Unlock()
	if h == nil {
		return nil
	}
	l.cl.lmu.Lock()
	delete(l.cl.locks, l)
	l.cl.lmu.Unlock()
	rc := C.redlock_unlock(l.cl.c, h)
	l.stopWatch() // no lost callback can come after the unlock returned
	return mkerr("unlock", l.Resource, rc)
}

// Watch keeps the lock extended (by its last TTL) until Unlock.  The returned
// channel receives one error (wrapping ErrLost) if the lock is lost, and is
// closed after that, or when the lock is unlocked or its client closed.
// Calling Watch again returns the same channel.
func (l *Lock) Watch() (<-chan error, error) {
	l.cl.mu.RLock()
	defer l.cl.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.live("watch"); err != nil {
		return nil, err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.lostCh != nil {
		return l.lostCh, nil
	}
	l.lostCh = make(chan error, 1)
	l.watchID = registry.add(l)
	if rc := C.rlgo_watch(l.cl.c, l.h, C.uintptr_t(l.watchID)); rc != 0 {
		registry.remove(l.watchID)
		l.watchID = 0
		l.lostCh = nil
		return nil, mkerr("watch", l.Resource, rc)
	}
	return l.lostCh, nil
}

// onLost runs on the library's I/O thread: it must not block.
func (l *Lock) onLost(reason int) {
	l.wmu.Lock()
	l.lost = true
	ch := l.lostCh
	l.wmu.Unlock()
	if ch == nil {
		return
	}
	if reason == 0 {
		reason = int(ELOST)
	}
	l.lostOnce.Do(func() {
		ch <- &Error{Op: "watch", Resource: l.Resource, Errno: Errno(reason)} // buffered: never blocks
		close(ch)
	})
}

func (l *Lock) stopWatch() {
	l.wmu.Lock()
	id, ch := l.watchID, l.lostCh
	l.watchID = 0
	l.wmu.Unlock()
	if id != 0 {
		registry.remove(id)
	}
	if ch != nil {
		l.lostOnce.Do(func() { close(ch) })
	}
}

// String describes the lock for logs.
func (l *Lock) String() string {
	return fmt.Sprintf("redlock.Lock{%q fence=%d}", l.Resource, l.Fence)
}
