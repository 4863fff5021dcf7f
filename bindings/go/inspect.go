package redlock

// Who holds a resource, and taking a lock back: Client.Inspect
// (redlock_inspect, its JSON decoded into an Inspection) and Client.Revoke
// (redlock_revoke).  Both are blocking rounds to every master that the
// library cannot take back: ctx bounds the caller's wait, as for TryLock.

// #include <stdlib.h>
// #include <redlock.h>
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"
)

// InspectKind says what kind of resource Inspect reads: its name is taken as
// the kind's calls take it (a lock's resource, a semaphore's or read-write
// lock's name, an election's name).
type InspectKind int

// The kinds of Inspect (REDLOCK_INSPECT_*).
const (
	InspectLock      InspectKind = C.REDLOCK_INSPECT_LOCK
	InspectSemaphore InspectKind = C.REDLOCK_INSPECT_SEMAPHORE
	InspectRWLock    InspectKind = C.REDLOCK_INSPECT_RWLOCK
	InspectElection  InspectKind = C.REDLOCK_INSPECT_ELECTION
)

// Inspection is the masters' view of one resource (redlock_inspect; the
// fields are its JSON object's, docs/api.md "Inspect and revoke").  A JSON
// null reads as the zero value: Value and Owner "" when no hold is agreed
// on (Owner also for another client's value, or a value without a label),
// the TTLs 0 when nothing is held, Fence 0 when no master has a counter.
type Inspection struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "lock", "semaphore", "rwlock", "election"
	// Held: a quorum of masters hold the same value (a semaphore: some
	// permit; a read-write lock: the writer or some reader).  A resource
	// held on a minority only is not held.
	Held bool `json:"held"`
	// Agreed: at least a quorum answered and every master that answered
	// shows the same holds.
	Agreed   bool   `json:"agreed"`
	Value    string `json:"value"`
	Owner    string `json:"owner"`
	TTLMinMs int64  `json:"ttl_ms_min"` // remaining TTL range of the agreed holds, over the masters that hold them
	TTLMaxMs int64  `json:"ttl_ms_max"`
	// Fence: the largest fence counter a master reports (an election's
	// term): at least the holder's token.
	Fence   uint64          `json:"fence"`
	Quorum  int             `json:"quorum"`
	Count   int             `json:"count"` // holds a quorum agrees on
	Holders []InspectHolder `json:"holders"`
	Masters []InspectMaster `json:"masters"`
	// Raw is the library's JSON text, as it wrote it.
	Raw string `json:"-"`
}

// InspectHolder is one hold a quorum agrees on.
type InspectHolder struct {
	Value    string `json:"value"`
	Owner    string `json:"owner"`
	TTLMinMs int64  `json:"ttl_ms_min"`
	TTLMaxMs int64  `json:"ttl_ms_max"`
	Slot     int    `json:"slot"` // a semaphore's permit slot
	Mode     string `json:"mode"` // a read-write lock's hold: "read" or "write"
}

// InspectMaster is one master's answer.
type InspectMaster struct {
	Addr string `json:"addr"`
	// State: "holds" (only agreed holds), "free", "other" (something no
	// quorum agrees on), or why it gave no answer ("down", "timeout",
	// "unsupported" for a master without Lua, "error", ...).
	State string `json:"state"`
	Value string `json:"value"` // its one hold ("" when none or several)
	Owner string `json:"owner"`
	TTLMs int64  `json:"ttl_ms"`
	Holds int    `json:"holds"`
}

// Inspect reads what every master stores for name and returns the quorum's
// view of it: held or not, the holder's owner label, the remaining TTL
// range, the fence counter, and each master's answer.  Nothing is written.
// It waits for every master's answer or its request timeout; when ctx is
// done first it returns ctx.Err() and the round ends in the background.
func (cl *Client) Inspect(ctx context.Context, name string, kind InspectKind) (*Inspection, error) {
	if err := checkResource("inspect", name); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxErr("inspect", name, err)
	}
	type outcome struct {
		text string
		rc   C.int
	}
	r, cerr := oneRound(ctx, func() outcome {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		cl.mu.RLock()
		defer cl.mu.RUnlock()
		if cl.closed {
			return outcome{rc: C.int(ECLOSED)}
		}
		// Each call is a round of its own: a text that outgrew the buffer
		// is read again into one of the size it said (plus room, as the
		// masters' view may change in between).
		size := 4096
		for {
			buf := make([]byte, size)
			n := C.redlock_inspect(cl.c, cs, C.int(kind), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(size))
			if n < 0 {
				return outcome{rc: n}
			}
			if int(n) < size {
				return outcome{text: string(buf[:n])}
			}
			size = int(n) + 1024
		}
	}, nil)
	if cerr != nil {
		return nil, ctxErr("inspect", name, cerr)
	}
	if r.rc != 0 {
		return nil, mkerr("inspect", name, r.rc)
	}
	in := &Inspection{Raw: r.text}
	if err := json.Unmarshal([]byte(r.text), in); err != nil {
		return nil, fmt.Errorf("redlock: inspect %q: %w", name, err)
	}
	return in, nil
}

// Revoke is an administrator's revoke of a lock (or an election's lease),
// whoever holds it: the hold is ended on a quorum, and with fencing on the
// key the masters' fence counter is raised above every token granted; the
// new counter is returned (0 when no master has one for the key).  Tell the
// resources the holder writes that fence: a store that checks tokens then
// refuses the old holder at once.  Without fencing the key keeps the rest
// of its TTL under a value of the revoker's, so nobody is granted it before
// the old lease would have ended.  Either way the holder's next extension
// (its watch's too) fails, and its watch reports ErrLost.  ErrNoQuorum when
// fewer than a quorum did it (some may have), ErrNotSup when too many masters
// run no Lua.  One round that cannot be taken back: ctx bounds the wait.
func (cl *Client) Revoke(ctx context.Context, resource string) (uint64, error) {
	if err := checkResource("revoke", resource); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, ctxErr("revoke", resource, err)
	}
	type outcome struct {
		fence uint64
		err   error
	}
	r, cerr := oneRound(ctx, func() outcome {
		cs := C.CString(resource)
		defer C.free(unsafe.Pointer(cs))
		cl.mu.RLock()
		defer cl.mu.RUnlock()
		if cl.closed {
			return outcome{err: &Error{Op: "revoke", Resource: resource, Errno: ECLOSED}}
		}
		var fence C.uint64_t
		rc, votes := roundCall(cl.c, func() C.int { return C.redlock_revoke(cl.c, cs, &fence) })
		return outcome{uint64(fence), roundErr("revoke", resource, rc, votes)}
	}, nil)
	if cerr != nil {
		return 0, ctxErr("revoke", resource, cerr)
	}
	return r.fence, r.err
}
