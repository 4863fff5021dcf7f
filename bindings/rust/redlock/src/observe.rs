//! Who leads an election: asked once ([`Client::leader`],
//! `redlock_election_leader`) or followed ([`Client::observe`],
//! `redlock_election_observe` / `redlock_observe_stop`).  An observer's
//! views reach the caller through an `mpsc` channel: the library's I/O
//! thread only sends (never blocks, never runs user code).
use crate::{call_result, check, cstring, millis, sys, Client, Result};
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// What a [`Leader`] view knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaderState {
    /// A quorum answered and none holds one lease: nobody leads, or a
    /// hand-off is half done.
    None,
    /// A quorum holds the same lease.
    Held,
    /// Fewer than a quorum of masters answered.
    Unknown,
}

/// The view of an election's leader that a quorum of masters holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    pub state: LeaderState,
    /// The leader's term (the fencing token its election got); 0 unless held.
    pub term: u64,
    /// The lease left in ms, the least over the quorum that holds it; 0 unless held.
    pub ttl_ms: i64,
    /// The leader's owner label ([`crate::Builder::owner`]); `""` when it
    /// set none, or when not held.
    pub owner: String,
}

impl Leader {
    fn from_raw(v: &sys::redlock_leader_t) -> Leader {
        let state = match v.state {
            sys::REDLOCK_LEADER_HELD => LeaderState::Held,
            sys::REDLOCK_LEADER_NONE => LeaderState::None,
            _ => LeaderState::Unknown,
        };
        // The library NUL-terminates the label within the array; a missing
        // NUL (never written) reads as no label rather than past the end.
        let bytes: Vec<u8> = v.owner.iter().map(|&c| c as u8).collect();
        let owner = CStr::from_bytes_until_nul(&bytes)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        Leader {
            state,
            term: v.term,
            ttl_ms: v.ttl_ms,
            owner,
        }
    }
}

/// State shared with the observer's callback (the library's I/O thread).
struct ObserverState {
    tx: Mutex<mpsc::Sender<Leader>>,
}

unsafe extern "C" fn leader_trampoline(
    _obs: *mut sys::redlock_observer_t,
    view: *const sys::redlock_leader_t,
    arg: *mut c_void,
) {
    // SAFETY: arg is a live ObserverState (freed only after the stop
    // returned); view is valid during the callback.
    let st = &*(arg as *const ObserverState);
    let v = Leader::from_raw(&*view);
    let tx = st.tx.lock().unwrap_or_else(|e| e.into_inner());
    let _ = tx.send(v); // unbounded: never blocks
}

/// Follows an election's leadership ([`Client::observe`]); stops when
/// dropped (or by [`Observer::stop`]), after which its receiver disconnects.
///
/// `Send + Sync`: nothing but the stop (which takes `self` by value or runs
/// in `Drop`) uses the handle.
pub struct Observer {
    client: Client,
    handle: Option<NonNull<sys::redlock_observer_t>>,
    state: *mut ObserverState,
    name: String,
}

// SAFETY: see the type's documentation; ObserverState is Sync (a Mutex).
unsafe impl Send for Observer {}
unsafe impl Sync for Observer {}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Observer {
    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stops following: no view is sent after it returns, and the receiver
    /// disconnects once the views already sent are read.
    pub fn stop(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        let h = match self.handle.take() {
            Some(h) => h,
            None => return Ok(()),
        };
        // SAFETY: live client and handle; the stop frees the handle, and no
        // callback of it runs after it returned (also on the I/O thread,
        // where it does not block).
        let rc = unsafe { sys::redlock_observe_stop(self.client.raw(), h.as_ptr()) };
        if rc == 0 {
            // SAFETY: no callback can use the state any more.
            drop(unsafe { Box::from_raw(self.state) });
            self.state = ptr::null_mut();
        }
        // Otherwise a callback might still come: the small state is leaked.
        check(rc)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

impl Client {
    /// Who leads the election `name` now: one read round to every master
    /// (nothing written; blocks as [`Client::inspect`]).  A view of
    /// [`LeaderState::Unknown`] (too few masters answered) is not an error.
    pub fn leader(&self, name: &str) -> Result<Leader> {
        let n = cstring(name)?;
        // SAFETY: redlock_leader_t is plain data (integers and a byte
        // array): all zeros is a valid value.
        let mut v: sys::redlock_leader_t = unsafe { std::mem::zeroed() };
        // SAFETY: live client, NUL-terminated name, valid out-pointer.
        let rc = unsafe { sys::redlock_election_leader(self.raw(), n.as_ptr(), &mut v) };
        call_result(self.raw(), rc, "leader", name, false)?;
        Ok(Leader::from_raw(&v))
    }

    /// Follows the leadership of the election `name` without campaigning.
    /// The receiver gets the view of the first read, then each change (a
    /// new leader or term, no leader, unknown; never the TTL alone).  The
    /// library re-reads when a release or a new term of `name` is
    /// announced, so a hand-off by resign or release is seen within about
    /// one round trip of the new leader's grant; when the lease it saw
    /// should have ended; and at least every `poll` (zero: the client's
    /// retry delay), for what no announcement tells (a lease that ran out,
    /// a master that lost its keys).  Dropping the [`Observer`] stops it.
    pub fn observe(
        &self,
        name: &str,
        poll: Duration,
    ) -> Result<(Observer, mpsc::Receiver<Leader>)> {
        let n = cstring(name)?;
        let poll = millis(poll)?;
        let (tx, rx) = mpsc::channel();
        let st = Box::into_raw(Box::new(ObserverState { tx: Mutex::new(tx) }));
        let mut out = ptr::null_mut();
        // SAFETY: live client; st stays allocated until the stop returned
        // (no callback after it) or, on failure, is freed here.
        let rc = unsafe {
            sys::redlock_election_observe(
                self.raw(),
                n.as_ptr(),
                poll,
                Some(leader_trampoline),
                st as *mut c_void,
                &mut out,
            )
        };
        if let Err(e) = call_result(self.raw(), rc, "observe", name, false) {
            // SAFETY: refused: no callback ever runs with st.
            drop(unsafe { Box::from_raw(st) });
            return Err(e);
        }
        let h = NonNull::new(out).expect("redlock: observe succeeded without a handle");
        Ok((
            Observer {
                client: self.clone(),
                handle: Some(h),
                state: st,
                name: name.to_owned(),
            },
            rx,
        ))
    }
}
