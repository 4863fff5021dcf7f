// Package redlock is a Go (cgo) binding of redlock-c, a Redlock client: a
// distributed lock over N independent Redis masters, held when a majority of
// them accepted it and time is left on it.
//
// Build: cgo finds libredlock with pkg-config (redlock.pc, installed by the
// project's `cmake --install`; PKG_CONFIG_PATH for another prefix, or a build
// directory, whose redlock-uninstalled.pc names the uninstalled library).
// -tags redlock_static links libredlock.a instead of libredlock.so.
//
// Context: every call that can wait takes a ctx.  Acquisitions (Lock,
// LockWait, LockMany, Semaphore, RWLockRead, RWLockWrite) are canceled in the
// library when ctx is done (redlock_cancel): nothing more is sent for them
// and nothing stays held.  TryLock, Extend, Unlock, Inspect, Revoke and
// Leader are one round each, which the library cannot take back: ctx bounds
// the caller's wait.  Elect's (and ElectBounded's) ctx is the campaign's: when
// it is done, the election resigns.
//
// Threads: a *Client and its *Locks may be used from any number of
// goroutines.  The C library calls back on its own I/O thread; this package's
// callbacks there never block (they hand results to buffered channels), so a
// slow goroutine never stalls the library.
package redlock

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Log levels for WithLogger.
const (
	LogDebug = C.REDLOCK_LOG_DEBUG
	LogInfo  = C.REDLOCK_LOG_INFO
	LogWarn  = C.REDLOCK_LOG_WARN
	LogError = C.REDLOCK_LOG_ERROR
)

// Limits of the C library (include/redlock.h, at compile time): MaxNodes 64,
// MaxResourceLen 1024, MaxPrefixLen 256, MaxMany 64, MaxSemLimit 1024.
const (
	MaxNodes       = C.REDLOCK_MAX_NODES
	MaxResourceLen = C.REDLOCK_MAX_RESOURCE_LEN
	MaxPrefixLen   = C.REDLOCK_MAX_PREFIX_LEN
	MaxMany        = C.REDLOCK_MAX_MANY
	MaxSemLimit    = C.REDLOCK_MAX_SEM_LIMIT
	MaxOwner       = C.REDLOCK_MAX_OWNER // bytes in an owner label (WithOwner)
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
	owner           *string
	logger          func(level int, msg string)
	logLevel        int
	tls             bool
	tlsCA, tlsCert  string
	tlsKey          string
	tlsServerName   *string
	tlsVerify       *bool
	allowDiscovered []string
}

// WithTLS sets the TLS trust and identity for rediss:// masters: ca is a PEM
// bundle or an OpenSSL hashed directory of trusted authorities ("" = the
// system's store); cert and key (PEM, both or neither) are this client's
// certificate and key, for masters that require one.  Open fails with
// ErrNotSup in a build without TLS (see TLSSupported), ErrInvalid (with the
// reason) when a file is unusable.
func WithTLS(ca, cert, key string) Option {
	return func(c *config) { c.tls, c.tlsCA, c.tlsCert, c.tlsKey = true, ca, cert, key }
}

// WithTLSServerName: the name the masters' certificates must carry (and the
// SNI), instead of each URI's host.
func WithTLSServerName(name string) Option { return func(c *config) { c.tlsServerName = &name } }

// WithAllowDiscovered adds host patterns (fnmatch globs, ASCII case ignored:
// "10.0.0.*", "*.redis.internal") for the addresses that sentinels and
// cluster nodes name.  Once any is given, a discovered address whose host
// matches none is never connected to: that voter votes down ("discovered
// address HOST:PORT not allowed").  The URIs' own hosts are not checked.
// Open fails with ErrInvalid for "", a pattern over 255 bytes, or more than
// 64 patterns.  Repeated options add to the list.
func WithAllowDiscovered(patterns ...string) Option {
	return func(c *config) { c.allowDiscovered = append(c.allowDiscovered, patterns...) }
}

// WithTLSVerify(false) turns off certificate and host name checks (tests only).
func WithTLSVerify(on bool) Option { return func(c *config) { c.tlsVerify = &on } }

// TLSSupported reports whether the linked libredlock can connect to rediss://
// masters.
func TLSSupported() bool { return C.redlock_tls_supported() != 0 }

func cstrOrNil(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// logCapture collects what the library logs while options are set: it gives
// the reason for a refused option only through the options' log callback,
// so one that captures it is set around those calls (Open sets the real one
// afterwards).
type logCapture struct {
	o       *C.redlock_options_t
	id      uintptr
	reasons []string
}

func captureLog(o *C.redlock_options_t) *logCapture {
	c := &logCapture{o: o}
	c.id = registry.add(func(_ int, msg string) { c.reasons = append(c.reasons, msg) })
	C.rlgo_set_log(o, LogDebug, C.uintptr_t(c.id))
	return c
}

// why is what was logged since the last reset ("; "-joined, each without
// prefix), or def when nothing was.
func (c *logCapture) why(prefix, def string) string {
	if len(c.reasons) == 0 {
		return def
	}
	out := make([]string, len(c.reasons))
	for i, r := range c.reasons {
		out[i] = strings.TrimPrefix(r, prefix)
	}
	return strings.Join(out, "; ")
}

func (c *logCapture) reset() { c.reasons = c.reasons[:0] }

func (c *logCapture) close() {
	C.redlock_options_set_log(c.o, LogWarn, nil, nil)
	registry.remove(c.id)
}

// addNodes adds the masters' URIs.  As for setTLS, the library gives the
// reason for a refused URI only through the options' log callback: one that
// captures it is set around these calls, so that the error says why.
func addNodes(o *C.redlock_options_t, nodes []string) error {
	logged := captureLog(o)
	defer logged.close()
	for _, n := range nodes {
		logged.reset()
		cs := C.CString(n)
		rc := C.redlock_options_add_node(o, cs)
		C.free(unsafe.Pointer(cs))
		if rc != 0 {
			what := redact(n)
			if why := logged.why("redlock_options_add_node: ", ""); why != "" {
				what += ": " + why
			}
			return &Error{Op: "option", Resource: what, Errno: Errno(rc)}
		}
	}
	return nil
}

// setTLS applies the TLS options, with the library's reason for a refusal
// (captureLog).
func setTLS(o *C.redlock_options_t, cfg *config) error {
	if !cfg.tls && cfg.tlsServerName == nil && cfg.tlsVerify == nil {
		return nil
	}
	logged := captureLog(o)
	defer logged.close()
	fail := func(what string, rc C.int) error {
		if rc == 0 {
			return nil
		}
		return &Error{Op: "option", Resource: what + ": " + logged.why("", "refused"), Errno: Errno(rc)}
	}
	if cfg.tls {
		var caFile, caDir string
		if st, err := os.Stat(cfg.tlsCA); err == nil && st.IsDir() {
			caDir = cfg.tlsCA
		} else {
			caFile = cfg.tlsCA
		}
		a, b, c, d := cstrOrNil(caFile), cstrOrNil(caDir), cstrOrNil(cfg.tlsCert), cstrOrNil(cfg.tlsKey)
		rc := C.redlock_options_set_tls(o, a, b, c, d)
		for _, p := range []*C.char{a, b, c, d} {
			C.free(unsafe.Pointer(p))
		}
		if err := fail("tls", rc); err != nil {
			return err
		}
	}
	if cfg.tlsServerName != nil {
		cs := C.CString(*cfg.tlsServerName)
		rc := C.redlock_options_set_tls_server_name(o, cs)
		C.free(unsafe.Pointer(cs))
		if err := fail("tls server name", rc); err != nil {
			return err
		}
	}
	if cfg.tlsVerify != nil {
		if err := fail("tls verify", C.redlock_options_set_tls_verify(o, cbool(*cfg.tlsVerify))); err != nil {
			return err
		}
	}
	return nil
}

// setAllowDiscovered adds the discovered-address patterns, with the
// library's reason for a refusal captured as in setTLS.
func setAllowDiscovered(o *C.redlock_options_t, patterns []string) error {
	if len(patterns) == 0 {
		return nil
	}
	logged := captureLog(o)
	defer logged.close()
	for _, p := range patterns {
		logged.reset()
		cs := C.CString(p)
		rc := C.redlock_options_allow_discovered(o, cs)
		C.free(unsafe.Pointer(cs))
		if rc != 0 {
			why := logged.why("", "refused")
			return &Error{Op: "option", Resource: fmt.Sprintf("allow discovered %q: %s", p, why), Errno: Errno(rc)}
		}
	}
	return nil
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

// WithOwner sets the client's owner label: a name a person can read
// ("host:pid", "billing-worker-3") carried in the value of every lock,
// permit, read/write hold and election lease the client takes, so that
// Inspect (and anyone who reads the masters) can tell who holds a resource.
// Anyone who can read the masters reads it: never put a secret in it.
// 1..MaxOwner bytes of printable ASCII (0x21..0x7e) except '~'; "" sets none
// (the default).  Open fails with ErrInvalid for anything else.  Other
// Redlock clients still exclude and are excluded: the value keeps its 128
// random bits (Lock.Value is then those 32 hex digits, '~', the label).
func WithOwner(label string) Option { return func(c *config) { c.owner = &label } }

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
	maxTTL  C.uint32_t // ms: the largest TTL the library takes (0: unknown)

	elections map[*Election]struct{} // live elections, closed by Close (under lmu)
	observers map[*Observer]struct{} // live observers, stopped by Close (under lmu)
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
	if err := addNodes(o, nodes); err != nil {
		return nil, err
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
	if cfg.owner != nil {
		cs := C.CString(*cfg.owner)
		rc := C.redlock_options_set_owner(o, cs)
		C.free(unsafe.Pointer(cs))
		if rc != 0 {
			return nil, &Error{Op: "option", Resource: "owner", Errno: Errno(rc), Detail: fmt.Sprintf(
				"%q: 1..%d bytes of printable ASCII except '~'", *cfg.owner, MaxOwner)}
		}
	}
	if err := setTLS(o, &cfg); err != nil {
		return nil, err
	}
	if err := setAllowDiscovered(o, cfg.allowDiscovered); err != nil {
		return nil, err
	}
	cl := &Client{locks: make(map[*Lock]struct{}), elections: make(map[*Election]struct{}),
		observers: make(map[*Observer]struct{})}
	var maxTTL C.uint32_t
	if C.redlock_options_get_max_ttl(o, &maxTTL) == 0 {
		cl.maxTTL = maxTTL
	}
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

// redact is the URI with its password and sentinel_password replaced by ***
// (redlock_uri_redact: the C parser's own reading of the URI, so a password
// holding '/' or '@' is hidden too).
func redact(uri string) string {
	cs := C.CString(uri)
	defer C.free(unsafe.Pointer(cs))
	n := C.redlock_uri_redact(cs, nil, 0)
	if n < 0 {
		return "(invalid URI)"
	}
	buf := (*C.char)(C.malloc(C.size_t(n) + 1))
	defer C.free(unsafe.Pointer(buf))
	if C.redlock_uri_redact(cs, buf, C.size_t(n)+1) != n {
		return "(invalid URI)"
	}
	return C.GoStringN(buf, n)
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
	elections := cl.elections
	cl.elections = nil
	observers := cl.observers
	cl.observers = nil
	cl.lmu.Unlock()
	for o := range observers {
		o.mu.Lock()
		o.h = nil // redlock_close stops and frees it
		o.mu.Unlock()
	}
	for e := range elections {
		e.mu.Lock()
		e.h = nil // redlock_close releases and frees it
		e.mu.Unlock()
	}
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
	for e := range elections {
		e.finish() // no callback runs after redlock_close
	}
	for o := range observers {
		o.finish()
	}
	if cl.logID != 0 {
		registry.remove(cl.logID)
	}
	return nil
}

// LastVotes is a one-line summary of the latest round a call of this OS
// thread waited on (diagnostics; do not parse).  Goroutines move between OS
// threads: for a failed call, Error.Votes holds that call's own.
func (cl *Client) LastVotes() string {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if cl.closed {
		return ""
	}
	return lastVotesOf(cl.c)
}

// lastVotesOf reads redlock_last_votes (on the I/O thread, inside a callback:
// the round of the call whose callback runs).
func lastVotesOf(c *C.redlock_t) string {
	buf := make([]byte, 4096)
	n := C.redlock_last_votes(c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	if n >= 0 && int(n) >= len(buf) {
		// Longer: the same record again (this thread makes no call in between).
		buf = make([]byte, int(n)+1)
		n = C.redlock_last_votes(c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	}
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

// ttlArg checks a TTL as the library would (1 ms .. the client's max TTL),
// so that a refusal says the limit and the option that raises it.
func (cl *Client) ttlArg(op, r string, ttl time.Duration) (C.uint32_t, error) {
	t, ok := ms(ttl)
	if !ok || t == 0 {
		return 0, &Error{Op: op, Resource: r, Errno: EINVAL, Detail: "the TTL must be at least 1ms"}
	}
	if cl.maxTTL != 0 && t > cl.maxTTL {
		return 0, &Error{Op: op, Resource: r, Errno: EINVAL, Detail: fmt.Sprintf(
			"TTL %v is above the client's max TTL (%v); raise it with WithMaxTTL",
			time.Duration(t)*time.Millisecond, time.Duration(cl.maxTTL)*time.Millisecond)}
	}
	return t, nil
}

// Lock acquires resource, retrying by the client's retry policy.  ctx
// cancels the call (redlock_cancel): Lock returns ctx.Err() once the library
// has ended it, nothing more is sent for it, and what a round already out
// wins meanwhile is released.
func (cl *Client) Lock(ctx context.Context, resource string, ttl time.Duration) (*Lock, error) {
	return cl.lockOne(ctx, "lock", resource, ttl, 0)
}

// LockWait acquires resource, waiting up to wait for the holder to release it
// (woken by the release).  When wait runs out: ErrTimeout if the resource was
// still held by another, ErrNoQuorum if the last attempt had too few masters
// (an outage, not a busy lock).  ctx cancels as in Lock.
func (cl *Client) LockWait(ctx context.Context, resource string, ttl, wait time.Duration) (*Lock, error) {
	w, ok := ms(wait)
	if !ok || w == 0 {
		return nil, &Error{Op: "lock_wait", Resource: resource, Errno: EINVAL}
	}
	return cl.lockOne(ctx, "lock_wait", resource, ttl, w)
}

func (cl *Client) lockOne(ctx context.Context, op, resource string, ttl time.Duration, wait C.uint32_t) (*Lock, error) {
	return cl.acquireNamed(ctx, op, resource, ttl,
		func(c *C.redlock_t, cs *C.char, t C.uint32_t, arg C.uintptr_t, id *C.uint64_t) C.int {
			return C.rlgo_lock_async_ex(c, cs, t, wait, arg, id)
		})
}

type lockResult struct {
	rc    C.int
	h     *C.redlock_lock_t
	votes string // failed: this call's votes (read in the callback)
}

// pendingLock is the registry entry of one callback-form acquisition.
type pendingLock struct {
	ch     chan lockResult // buffered(1): the one callback never blocks
	client *C.redlock_t    // for the votes, read in the callback (set before the call starts)
}

// startFn starts one cancelable acquisition (an _ex form): its callback
// reports to registry key arg; *id receives the call's id for redlock_cancel.
type startFn func(c *C.redlock_t, arg C.uintptr_t, id *C.uint64_t) C.int

// namedStart is a startFn of one name, given as a C string.
type namedStart func(c *C.redlock_t, name *C.char, ttl C.uint32_t, arg C.uintptr_t, id *C.uint64_t) C.int

func (cl *Client) acquireNamed(ctx context.Context, op, name string, ttl time.Duration, start namedStart) (*Lock, error) {
	if err := checkResource(op, name); err != nil {
		return nil, err
	}
	t, err := cl.ttlArg(op, name, ttl)
	if err != nil {
		return nil, err
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return cl.acquire(ctx, op, []string{name}, func(c *C.redlock_t, arg C.uintptr_t, id *C.uint64_t) C.int {
		return start(c, cs, t, arg, id)
	})
}

// acquire runs one cancelable acquisition to its end.  When ctx is done
// first, the call is canceled by its id and acquire waits for its callback,
// which comes soon (in the loop turn that takes the cancel): the library
// then sends nothing more for it.  If the call's outcome was decided just
// before the cancel (REDLOCK_CANCEL_LATE), a grant goes back at once: a
// caller that sees ctx.Err() holds nothing.
func (cl *Client) acquire(ctx context.Context, op string, resources []string, start startFn) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxErr(op, resources[0], err)
	}
	p := &pendingLock{ch: make(chan lockResult, 1)}
	cl.mu.RLock()
	if cl.closed {
		cl.mu.RUnlock()
		return nil, &Error{Op: op, Resource: resources[0], Errno: ECLOSED}
	}
	p.client = cl.c
	key := registry.add(p)
	var id C.uint64_t
	rc := start(cl.c, C.uintptr_t(key), &id)
	cl.mu.RUnlock()
	if rc != 0 {
		registry.remove(key)
		return nil, mkerr(op, resources[0], rc)
	}
	var r lockResult
	select {
	case r = <-p.ch:
	case <-ctx.Done():
		cl.cancel(id)
		// Not under cl.mu: a Close under way runs this callback (ECANCELED).
		if r = <-p.ch; r.rc == 0 {
			cl.releaseQuiet(r.h)
		}
		return nil, ctxErr(op, resources[0], ctx.Err())
	}
	if r.rc != 0 {
		return nil, &Error{Op: op, Resource: resources[0], Errno: Errno(r.rc), Votes: r.votes}
	}
	return cl.adopt(op, r.h, resources)
}

// cancel asks the library to end call id.  Never after the client's close
// (the id would be meaningless): a close ends every call itself.
func (cl *Client) cancel(id C.uint64_t) {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if !cl.closed {
		C.redlock_cancel(cl.c, id) // 0 or REDLOCK_CANCEL_LATE: the callback tells which
	}
}

// releaseQuiet gives back a granted handle nobody will own, in the
// background.  After the client's close there is nothing to do: the close
// released it and freed the handle.
func (cl *Client) releaseQuiet(h *C.redlock_lock_t) {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if !cl.closed {
		C.rlgo_unlock_async_quiet(cl.c, h)
	}
}

// oneRound runs call, a blocking C call of one round that the library cannot
// take back (trylock, extend, unlock).  With a ctx that can be done it runs
// on its own goroutine, and the caller stops waiting when ctx is done: it
// gets ctx.Err() at once, the round ends by itself in the background (within
// the request timeout), and late (if not nil) receives its outcome.
func oneRound[T any](ctx context.Context, call func() T, late func(T)) (T, error) {
	if ctx.Done() == nil {
		return call(), nil
	}
	ch := make(chan T, 1)
	go func() { ch <- call() }()
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		if late != nil {
			go func() { late(<-ch) }()
		}
		var zero T
		return zero, ctx.Err()
	}
}

// TryLock makes one attempt (ErrLocked when another holder has a quorum).
// The attempt is one round, which the library cannot call back: when ctx is
// done first, TryLock returns ctx.Err() at once and a grant that the round
// still wins is released in the background.
func (cl *Client) TryLock(ctx context.Context, resource string, ttl time.Duration) (*Lock, error) {
	if err := checkResource("trylock", resource); err != nil {
		return nil, err
	}
	t, err := cl.ttlArg("trylock", resource, ttl)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr("trylock", resource, err)
	}
	type outcome struct {
		rc    C.int
		h     *C.redlock_lock_t
		votes string
	}
	r, err := oneRound(ctx, func() outcome {
		cs := C.CString(resource)
		defer C.free(unsafe.Pointer(cs))
		var h *C.redlock_lock_t
		cl.mu.RLock()
		defer cl.mu.RUnlock()
		if cl.closed {
			return outcome{rc: C.int(ECLOSED)}
		}
		rc, votes := roundCall(cl.c, func() C.int { return C.redlock_trylock(cl.c, cs, t, &h) })
		return outcome{rc, h, votes}
	}, func(r outcome) {
		if r.rc == 0 {
			cl.releaseQuiet(r.h)
		}
	})
	if err != nil {
		return nil, ctxErr("trylock", resource, err)
	}
	if r.rc != 0 {
		return nil, roundErr("trylock", resource, r.rc, r.votes)
	}
	return cl.adopt("trylock", r.h, []string{resource})
}

// LockMany takes all resources (1..64, distinct) or none, as one Lock,
// retrying by the retry policy.  ctx cancels as in Lock.
func (cl *Client) LockMany(ctx context.Context, resources []string, ttl time.Duration) (*Lock, error) {
	if len(resources) == 0 || len(resources) > MaxMany {
		return nil, &Error{Op: "lock_many", Errno: EINVAL}
	}
	for _, r := range resources {
		if err := checkResource("lock_many", r); err != nil {
			return nil, err
		}
	}
	t, err := cl.ttlArg("lock_many", resources[0], ttl)
	if err != nil {
		return nil, err
	}
	res := append([]string(nil), resources...)
	// C memory for the array: cgo forbids passing Go memory that holds
	// pointers.  The library copies the names before the call returns.
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
	return cl.acquire(ctx, "lock_many", res, func(c *C.redlock_t, arg C.uintptr_t, id *C.uint64_t) C.int {
		return C.rlgo_lock_many_async_ex(c, &arr[0], C.size_t(len(res)), t, arg, id)
	})
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
		owner:     C.GoString(C.redlock_lock_owner(h)),
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
	Value     string   // the value stored in Redis (32 random hex digits, then '~' and the owner label if any)
	Fence     uint64   // fencing token; 0 without WithFencing(true)
	owner     string

	wmu      sync.Mutex
	watchID  uintptr
	lostCh   chan error
	lostOnce sync.Once
	lost     bool
}

// Owner is the owner label the lock's value carries (WithOwner of its
// client), "" when none.  Readable after release.
func (l *Lock) Owner() string { return l.owner }

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
// is lost or its validity has run out.  An extension cannot be taken back
// once sent: when ctx is done first, Extend returns ctx.Err() at once and
// the round ends in the background (Validity and Lost tell its outcome; an
// Unlock meanwhile waits for it).  A ctx done before the call sends nothing.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	t, err := l.cl.ttlArg("extend", l.Resource, ttl)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return ctxErr("extend", l.Resource, err)
	}
	rerr, cerr := oneRound(ctx, func() error {
		l.cl.mu.RLock()
		defer l.cl.mu.RUnlock()
		l.mu.RLock()
		defer l.mu.RUnlock()
		if err := l.live("extend"); err != nil {
			return err
		}
		// Lost already (or run out): ErrLost without a round, so no votes.
		lostBefore := C.redlock_lock_is_lost(l.h) != 0
		rc, votes := roundCall(l.cl.c, func() C.int { return C.redlock_extend(l.cl.c, l.h, t) })
		if lostBefore {
			votes = ""
		}
		return roundErr("extend", l.Resource, rc, votes)
	}, nil)
	if cerr != nil {
		return ctxErr("extend", l.Resource, cerr)
	}
	return rerr
}

// Unlock releases the lock on every master.  The Lock is released even when
// it returns an error (ErrLost, ErrNoQuorum).  A second Unlock returns nil.
// The release is always sent, even with a ctx already done: ctx only bounds
// the wait for the masters' answers (ctx.Err() when it is done first; the
// release goes on in the background).
func (l *Lock) Unlock(ctx context.Context) error {
	l.cl.mu.RLock() // until the C call is over (on oneRound's goroutine)
	l.mu.Lock()
	h := l.h
	l.h = nil
	l.mu.Unlock()
	if h == nil {
		l.cl.mu.RUnlock()
		return nil
	}
	l.cl.lmu.Lock()
	delete(l.cl.locks, l)
	l.cl.lmu.Unlock()
	rerr, cerr := oneRound(ctx, func() error {
		defer l.cl.mu.RUnlock()
		rc, votes := roundCall(l.cl.c, func() C.int { return C.redlock_unlock(l.cl.c, h) })
		l.stopWatch() // no lost callback can come after the unlock returned
		return roundErr("unlock", l.Resource, rc, votes)
	}, nil)
	if cerr != nil {
		return ctxErr("unlock", l.Resource, cerr)
	}
	return rerr
}

// Watch keeps the lock extended (by its last TTL) until Unlock.  The returned
// channel receives one error (wrapping ErrLost) if the lock is lost, and is
// closed after that, or when the lock is unlocked or its client closed.
// Calling Watch again returns the same channel.
func (l *Lock) Watch() (<-chan error, error) {
	return l.watch("watch", 0)
}

// WatchBounded is Watch with a bound on the whole hold: maxHold after the
// lock's grant (not after this call: a bound already spent ends the hold at
// once) the watch stops, the lock is released on every master (waiters are
// woken), and the channel receives one error wrapping ErrMaxHold (the C
// reason LostMaxHold).  That is not a failure: the library ended the hold
// on purpose, as asked.  A lock lost before its bound reports ErrLost, as
// with Watch.  The Lock stays the caller's: Lost() is true after the bound,
// and Unlock frees it, returning ErrLost (nothing was left to release).  On a lock already
// watched it sets (replaces) the bound and returns the same channel; a later
// Watch keeps the channel and the bound.  maxHold must be at least 1 ms.
func (l *Lock) WatchBounded(maxHold time.Duration) (<-chan error, error) {
	b, ok := ms(maxHold)
	if !ok || b == 0 {
		return nil, &Error{Op: "watch", Resource: l.Resource, Errno: EINVAL,
			Detail: "the bound must be at least 1ms"}
	}
	return l.watch("watch", b)
}

// watch starts the watch (bound 0: none), or on a watched lock sets a bound.
func (l *Lock) watch(op string, bound C.uint32_t) (<-chan error, error) {
	l.cl.mu.RLock()
	defer l.cl.mu.RUnlock()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if err := l.live(op); err != nil {
		return nil, err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.lostCh != nil {
		if bound != 0 && l.watchID != 0 {
			// The same registry id: the library replaces the bound, the
			// callback still reaches this Lock.
			if rc := C.rlgo_watch_bounded(l.cl.c, l.h, bound, C.uintptr_t(l.watchID)); rc != 0 {
				return nil, mkerr(op, l.Resource, rc)
			}
		}
		return l.lostCh, nil
	}
	l.lostCh = make(chan error, 1)
	l.watchID = registry.add(l)
	var rc C.int
	if bound != 0 {
		rc = C.rlgo_watch_bounded(l.cl.c, l.h, bound, C.uintptr_t(l.watchID))
	} else {
		rc = C.rlgo_watch(l.cl.c, l.h, C.uintptr_t(l.watchID))
	}
	if rc != 0 {
		registry.remove(l.watchID)
		l.watchID = 0
		l.lostCh = nil
		return nil, mkerr(op, l.Resource, rc)
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
	err := lostErr("watch", l.Resource, reason)
	l.lostOnce.Do(func() {
		ch <- err // buffered: never blocks
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

// ---- coordination primitives: counting semaphore, read-write lock ------------------

func waitArg(op, name string, wait time.Duration) (C.uint32_t, error) {
	w, ok := ms(wait)
	if !ok {
		return 0, &Error{Op: op, Resource: name, Errno: EINVAL}
	}
	return w, nil
}

// Semaphore acquires one of limit (1..MaxSemLimit, the same for every
// client) permits of the counting semaphore name.  wait 0: one try
// (ErrLocked when every permit is taken); > 0: wait for a release, up to
// wait (ErrTimeout).  The permit is a *Lock (Unlock, Extend, Watch); its
// Resource names the slot ("NAME:sem:3").  ctx cancels as in Lock.
func (cl *Client) Semaphore(ctx context.Context, name string, limit int, ttl, wait time.Duration) (*Lock, error) {
	w, err := waitArg("semaphore", name, wait)
	if err != nil {
		return nil, err
	}
	if limit < 1 || limit > MaxSemLimit {
		return nil, &Error{Op: "semaphore", Resource: name, Errno: EINVAL}
	}
	return cl.acquireNamed(ctx, "semaphore", name, ttl,
		func(c *C.redlock_t, cs *C.char, t C.uint32_t, arg C.uintptr_t, id *C.uint64_t) C.int {
			return C.rlgo_semaphore_acquire_async_ex(c, cs, C.uint32_t(limit), t, w, arg, id)
		})
}

// RWLockRead takes a read hold of the read-write lock name: shared with
// other readers, excluded by a writer (and by a waiting writer's intent).
// wait as in Semaphore.
func (cl *Client) RWLockRead(ctx context.Context, name string, ttl, wait time.Duration) (*Lock, error) {
	w, err := waitArg("rwlock_read", name, wait)
	if err != nil {
		return nil, err
	}
	return cl.acquireNamed(ctx, "rwlock_read", name, ttl,
		func(c *C.redlock_t, cs *C.char, t C.uint32_t, arg C.uintptr_t, id *C.uint64_t) C.int {
			return C.rlgo_rwlock_read_async_ex(c, cs, t, w, arg, id)
		})
}

// RWLockWrite takes the write hold of the read-write lock name: it excludes
// readers and other writers.  wait as in Semaphore.
func (cl *Client) RWLockWrite(ctx context.Context, name string, ttl, wait time.Duration) (*Lock, error) {
	w, err := waitArg("rwlock_write", name, wait)
	if err != nil {
		return nil, err
	}
	return cl.acquireNamed(ctx, "rwlock_write", name, ttl,
		func(c *C.redlock_t, cs *C.char, t C.uint32_t, arg C.uintptr_t, id *C.uint64_t) C.int {
			return C.rlgo_rwlock_write_async_ex(c, cs, t, w, arg, id)
		})
}

// ---- leader election ------------------------------------------------------------

// Election is a campaign for leadership of a name (Client.Elect).
//
// Elected receives each term won (the lease's fencing token, larger than
// every earlier term of the name); Lost receives an error wrapping ErrLost
// when a term ended by itself, or ErrMaxHold when ElectBounded's bound ended
// it (the election then campaigns again).  Both
// are buffered and filled by the library's I/O thread without blocking: if
// a reader falls more than 16 events behind, the newest events are dropped
// (Term and Leader always tell the current state).  Both channels are closed
// after Resign or the client's Close.
type Election struct {
	Name    string
	Elected <-chan uint64
	Lost    <-chan error

	cl      *Client
	id      uintptr
	elected chan uint64
	lost    chan error

	mu       sync.RWMutex // RLock for calls that use h; Lock to drop it
	h        *C.redlock_election_t
	smu      sync.Mutex // guards the fields below and the channels' closing
	term     uint64
	leader   bool
	done     bool
	finished chan struct{} // closed with the channels: ends Elect's ctx watcher
}

// Elect campaigns for leadership of name with a lease of ttl (watched while
// leader) until Resign, Close, or ctx is done: the campaign is ctx's, and
// when ctx is done the election resigns (as Resign: a lease held is
// released, the channels close).  A ctx done before the call starts nothing.
func (cl *Client) Elect(ctx context.Context, name string, ttl time.Duration) (*Election, error) {
	return cl.elect(ctx, name, ttl, 0)
}

// ElectBounded is Elect with a bound on every term: maxHold after a term's
// grant the leader resigns that term (its lease is released, which wakes the
// other campaigners), Lost receives an error wrapping ErrMaxHold (the C
// reason LostMaxHold; not a failure), and the election campaigns again
// after its back-off, which gives the others a head start.  maxHold must be
// at least 1 ms.
func (cl *Client) ElectBounded(ctx context.Context, name string, ttl, maxHold time.Duration) (*Election, error) {
	b, ok := ms(maxHold)
	if !ok || b == 0 {
		return nil, &Error{Op: "elect", Resource: name, Errno: EINVAL, Detail: "the bound must be at least 1ms"}
	}
	return cl.elect(ctx, name, ttl, b)
}

// elect starts a campaign; bound 0: unbounded terms.
func (cl *Client) elect(ctx context.Context, name string, ttl time.Duration, bound C.uint32_t) (*Election, error) {
	if err := checkResource("elect", name); err != nil {
		return nil, err
	}
	t, err := cl.ttlArg("elect", name, ttl)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr("elect", name, err)
	}
	e := &Election{Name: name, cl: cl, elected: make(chan uint64, 16), lost: make(chan error, 16),
		finished: make(chan struct{})}
	e.Elected, e.Lost = e.elected, e.lost
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if cl.closed {
		return nil, &Error{Op: "elect", Resource: name, Errno: ECLOSED}
	}
	e.mu.Lock() // callbacks do not need it; Resign does, after h is set
	defer e.mu.Unlock()
	e.id = registry.add(e)
	var rc C.int
	if bound != 0 {
		rc = C.rlgo_elect_bounded(cl.c, cs, t, bound, C.uintptr_t(e.id), &e.h)
	} else {
		rc = C.rlgo_elect(cl.c, cs, t, C.uintptr_t(e.id), &e.h)
	}
	if rc != 0 {
		registry.remove(e.id)
		return nil, mkerr("elect", name, rc)
	}
	cl.lmu.Lock()
	if cl.closing { // Close is waiting for cl.mu: it frees the handle
		cl.lmu.Unlock()
		e.h = nil
		registry.remove(e.id)
		return nil, &Error{Op: "elect", Resource: name, Errno: ECLOSED}
	}
	cl.elections[e] = struct{}{}
	cl.lmu.Unlock()
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				e.Resign() // waits for this Elect's locks: it runs after Elect returned
			case <-e.finished:
			}
		}()
	}
	return e, nil
}

// onElected and onLost run on the library's I/O thread: they never block.
func (e *Election) onElected(term uint64) {
	e.smu.Lock()
	defer e.smu.Unlock()
	if e.done {
		return
	}
	e.term, e.leader = term, true
	select {
	case e.elected <- term:
	default:
	}
}

func (e *Election) onLost(reason int) {
	e.smu.Lock()
	defer e.smu.Unlock()
	if e.done {
		return
	}
	e.leader = false
	select {
	case e.lost <- lostErr("elect", e.Name, reason):
	default:
	}
}

// finish closes the channels; no callback runs afterwards.
func (e *Election) finish() {
	registry.remove(e.id)
	e.smu.Lock()
	defer e.smu.Unlock()
	if !e.done {
		e.done, e.leader = true, false
		close(e.elected)
		close(e.lost)
		close(e.finished)
	}
}

// Term is the latest term won (0 before any).
func (e *Election) Term() uint64 {
	e.smu.Lock()
	defer e.smu.Unlock()
	return e.term
}

// Leader reports whether this client currently holds leadership.
func (e *Election) Leader() bool {
	e.smu.Lock()
	defer e.smu.Unlock()
	return e.leader
}

// Validity is the leadership left in the current term (<= 0 when not leader).
func (e *Election) Validity() time.Duration {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.h == nil {
		return 0
	}
	return time.Duration(C.redlock_election_validity_ms(e.h)) * time.Millisecond
}

// Resign stops campaigning and releases the lease if leader (the next
// campaigner is woken at once), then closes Elected and Lost.  Idempotent.
// Do not call it from a WithLogger function (the I/O thread).
func (e *Election) Resign() error {
	e.cl.mu.RLock()
	defer e.cl.mu.RUnlock()
	e.mu.Lock()
	h := e.h
	e.h = nil
	e.mu.Unlock()
	if h == nil {
		return nil
	}
	e.cl.lmu.Lock()
	delete(e.cl.elections, e)
	e.cl.lmu.Unlock()
	rc := C.redlock_resign(e.cl.c, h)
	e.finish() // no callback runs after redlock_resign returned
	return mkerr("resign", e.Name, rc)
}

// ---- stats --------------------------------------------------------------------

// Stats formats for StatsText.
const (
	StatsPrometheus = C.REDLOCK_STATS_PROMETHEUS
	StatsJSON       = C.REDLOCK_STATS_JSON
)

// StatsText renders the client's counters, gauges and latency histograms
// (redlock_stats) as Prometheus text (StatsPrometheus) or one JSON object
// (StatsJSON).  ErrNotSup when stats are off.
func (cl *Client) StatsText(format int) (string, error) {
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if cl.closed {
		return "", &Error{Op: "stats", Errno: ECLOSED}
	}
	n := C.redlock_stats(cl.c, C.int(format), nil, 0)
	for {
		if n < 0 {
			return "", mkerr("stats", "", n)
		}
		size := int(n) + 4096 // counters may grow in between
		buf := make([]byte, size)
		n = C.redlock_stats(cl.c, C.int(format), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(size))
		if n >= 0 && int(n) < size {
			return string(buf[:n]), nil
		}
	}
}

// Stats returns the JSON rendering decoded into a map (counters by label are
// nested maps: s["operations_total"].(map[string]any)["acquire"]...; numbers
// are float64).
func (cl *Client) Stats() (map[string]any, error) {
	text, err := cl.StatsText(StatsJSON)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("redlock: stats: %w", err)
	}
	return m, nil
}
