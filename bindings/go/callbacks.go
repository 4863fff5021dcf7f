package redlock

// Callbacks from the C library's I/O thread.  They never block: results go to
// buffered channels, and ids that are no longer registered are ignored (a
// lost callback racing with Unlock, an election's event after Resign).

// #include "shim.h"
import "C"

import (
	"sync"
	"time"
)

// registry maps the ids passed through the C callbacks' `void *arg` to Go
// values (cgo forbids handing Go pointers to C for later use).  Unlike
// runtime/cgo.Handle, looking up a removed id is not an error.
var registry = &idRegistry{m: make(map[uintptr]interface{})}

type idRegistry struct {
	mu   sync.Mutex
	next uintptr
	m    map[uintptr]interface{}
}

func (r *idRegistry) add(v interface{}) uintptr {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	if r.next == 0 {
		r.next = 1
	}
	r.m[r.next] = v
	return r.next
}

func (r *idRegistry) get(id uintptr) interface{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

func (r *idRegistry) remove(id uintptr) {
	r.mu.Lock()
	delete(r.m, id)
	r.mu.Unlock()
}

//export goLockCallback
func goLockCallback(status C.int, lock *C.redlock_lock_t, id C.uintptr_t) {
	v := registry.get(uintptr(id))
	registry.remove(uintptr(id))
	p, ok := v.(*pendingLock)
	if !ok {
		return
	}
	var votes string
	if roundErrno(status) {
		votes = lastVotesOf(p.client) // here, on the I/O thread: this call's round
	}
	// The library calls back exactly once per call, canceled or not, and the
	// caller always takes the result (a grant after its ctx was done goes
	// back from there): buffered(1), this never blocks.
	p.ch <- lockResult{rc: status, h: lock, votes: votes}
}

//export goLostCallback
func goLostCallback(reason C.int, id C.uintptr_t) {
	if l, ok := registry.get(uintptr(id)).(*Lock); ok {
		l.onLost(int(reason))
	}
}

//export goLogCallback
func goLogCallback(level C.int, msg *C.char, id C.uintptr_t) {
	if fn, ok := registry.get(uintptr(id)).(func(int, string)); ok {
		fn(int(level), C.GoString(msg))
	}
}

//export goElectedCallback
func goElectedCallback(term C.uint64_t, id C.uintptr_t) {
	if e, ok := registry.get(uintptr(id)).(*Election); ok {
		e.onElected(uint64(term))
	}
}

//export goElectionLostCallback
func goElectionLostCallback(reason C.int, id C.uintptr_t) {
	if e, ok := registry.get(uintptr(id)).(*Election); ok {
		e.onLost(int(reason))
	}
}

//export goLeaderCallback
func goLeaderCallback(state C.int, term C.uint64_t, ttl C.int64_t, owner *C.char, id C.uintptr_t) {
	if o, ok := registry.get(uintptr(id)).(*Observer); ok {
		o.push(Leader{State: LeaderState(state), Term: uint64(term),
			TTL: time.Duration(ttl) * time.Millisecond, Owner: C.GoString(owner)})
	}
}
