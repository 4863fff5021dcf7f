package redlock

// Who leads an election: asked once (Client.Leader, redlock_election_leader)
// or followed (Client.Observe, redlock_election_observe and
// redlock_observe_stop).  An observer's views come from the library's I/O
// thread, which only queues them (never blocking); a goroutine of the
// observer hands them to the caller's function in order.

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"
)

// LeaderState says what a Leader view knows.
type LeaderState int

// The states of a Leader view (REDLOCK_LEADER_*).
const (
	// LeaderNone: a quorum answered and none holds one lease: nobody leads,
	// or a hand-off is half done.
	LeaderNone LeaderState = C.REDLOCK_LEADER_NONE
	// LeaderHeld: a quorum holds the same lease.
	LeaderHeld LeaderState = C.REDLOCK_LEADER_HELD
	// LeaderUnknown: fewer than a quorum of masters answered.
	LeaderUnknown LeaderState = C.REDLOCK_LEADER_UNKNOWN
)

func (s LeaderState) String() string {
	switch s {
	case LeaderNone:
		return "none"
	case LeaderHeld:
		return "held"
	case LeaderUnknown:
		return "unknown"
	}
	return "LeaderState(?)"
}

// Leader is the view of an election's leader that a quorum of masters holds.
type Leader struct {
	State LeaderState
	Term  uint64        // the leader's term (its fencing token); 0 unless LeaderHeld
	TTL   time.Duration // lease left, the least over the quorum that holds it; 0 unless LeaderHeld
	Owner string        // the leader's owner label (WithOwner); "" when it set none or not held
}

// Leader asks who leads the election name now: one read round to every
// master (nothing written).  LeaderUnknown when too few masters answered is
// a view, not an error.  ctx bounds the caller's wait, as for Inspect.
func (cl *Client) Leader(ctx context.Context, name string) (Leader, error) {
	if err := checkResource("leader", name); err != nil {
		return Leader{}, err
	}
	if err := ctx.Err(); err != nil {
		return Leader{}, ctxErr("leader", name, err)
	}
	type outcome struct {
		v  Leader
		rc C.int
	}
	r, cerr := oneRound(ctx, func() outcome {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		cl.mu.RLock()
		defer cl.mu.RUnlock()
		if cl.closed {
			return outcome{rc: C.int(ECLOSED)}
		}
		var v C.redlock_leader_t
		if rc := C.redlock_election_leader(cl.c, cs, &v); rc != 0 {
			return outcome{rc: rc}
		}
		return outcome{v: Leader{State: LeaderState(v.state), Term: uint64(v.term),
			TTL: time.Duration(v.ttl_ms) * time.Millisecond, Owner: C.GoString(&v.owner[0])}}
	}, nil)
	if cerr != nil {
		return Leader{}, ctxErr("leader", name, cerr)
	}
	return r.v, mkerr("leader", name, r.rc)
}

// Observer follows the leadership of an election (Client.Observe).  Stop it.
type Observer struct {
	Name string

	cl *Client
	id uintptr
	fn func(Leader)

	mu sync.Mutex // guards h
	h  *C.redlock_observer_t

	qmu     sync.Mutex // guards the fields below and wake's closing
	queue   []Leader
	stopped bool
	wake    chan struct{} // buffered(1): views are queued; closed by finish
}

// Observe follows the leadership of the election name without campaigning:
// fn gets the view of the first read, then each change of it (a new leader
// or term, no leader, unknown; never the TTL alone).  The library re-reads
// when a release or a new term of name is announced, so a hand-off by
// resign or release is seen within about one round trip of the new
// leader's grant; when the lease it saw should have ended; and at least
// every poll (0: the client's retry delay), for what no announcement tells
// (a lease that ran out, a master that lost its keys).  fn runs on a
// goroutine of the observer, one view at a time in order (not on the
// library's I/O thread): it may call the client, Stop included.  Stop, or
// the client's Close, ends it.
func (cl *Client) Observe(name string, poll time.Duration, fn func(Leader)) (*Observer, error) {
	if err := checkResource("observe", name); err != nil {
		return nil, err
	}
	p, ok := ms(poll)
	if !ok || fn == nil {
		return nil, &Error{Op: "observe", Resource: name, Errno: EINVAL}
	}
	o := &Observer{Name: name, cl: cl, fn: fn, wake: make(chan struct{}, 1)}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	cl.mu.RLock()
	defer cl.mu.RUnlock()
	if cl.closed {
		return nil, &Error{Op: "observe", Resource: name, Errno: ECLOSED}
	}
	o.mu.Lock() // callbacks do not need it; Stop does, after h is set
	defer o.mu.Unlock()
	o.id = registry.add(o)
	go o.run()
	if rc := C.rlgo_election_observe(cl.c, cs, p, C.uintptr_t(o.id), &o.h); rc != 0 {
		o.finish()
		return nil, mkerr("observe", name, rc)
	}
	cl.lmu.Lock()
	if cl.closing { // Close is waiting for cl.mu: it stops and frees the observer
		cl.lmu.Unlock()
		o.h = nil
		o.finish()
		return nil, &Error{Op: "observe", Resource: name, Errno: ECLOSED}
	}
	cl.observers[o] = struct{}{}
	cl.lmu.Unlock()
	return o, nil
}

// push runs on the library's I/O thread: it queues and never blocks.
func (o *Observer) push(v Leader) {
	o.qmu.Lock()
	defer o.qmu.Unlock()
	if o.stopped {
		return
	}
	o.queue = append(o.queue, v)
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run hands the queued views to fn, in order, until finish.
func (o *Observer) run() {
	for range o.wake {
		for {
			o.qmu.Lock()
			if o.stopped || len(o.queue) == 0 {
				o.qmu.Unlock()
				break
			}
			v := o.queue[0]
			o.queue = o.queue[1:]
			o.qmu.Unlock()
			o.fn(v)
		}
	}
}

// finish drops the views not yet handed over and ends run; no callback of
// the library reaches the observer afterwards.
func (o *Observer) finish() {
	registry.remove(o.id)
	o.qmu.Lock()
	defer o.qmu.Unlock()
	if !o.stopped {
		o.stopped = true
		o.queue = nil
		close(o.wake)
	}
}

// Stop ends the observer: the library reads no more, and fn gets no view
// that arrives after Stop (one already being handed over, or a call under
// way, still completes).  Idempotent; callable from fn.
func (o *Observer) Stop() error {
	o.cl.mu.RLock()
	defer o.cl.mu.RUnlock()
	o.mu.Lock()
	h := o.h
	o.h = nil
	o.mu.Unlock()
	if h == nil {
		return nil
	}
	o.cl.lmu.Lock()
	delete(o.cl.observers, o)
	o.cl.lmu.Unlock()
	rc := C.redlock_observe_stop(o.cl.c, h)
	o.finish() // no callback runs after redlock_observe_stop returned
	return mkerr("observe_stop", o.Name, rc)
}
