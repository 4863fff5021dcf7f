//! Acquisitions as futures: [`Acquire`], what `Client::*_async` return.  The
//! call is one of the library's `_ex` callback forms; its id is kept in the
//! future, and dropping the future before it completed cancels the call
//! (`redlock_cancel`): the library sends nothing more for it and releases
//! whatever a round out at that moment wins.  Works with any executor: the
//! library's I/O thread completes the call and wakes the task.
use super::{last_votes_of, poll_outcome, sys, Call, Client, Error, ErrorKind, Lock, Result};
use std::future::Future;
use std::os::raw::{c_int, c_void};
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};

/// What the callback left for the future.  Guarded by `Slot::state`.
struct State {
    /// The call's status and lock, with the votes of its round when it
    /// failed after one; `None` until the callback ran.  The lock is owned
    /// here until the future takes it (or the callback releases it when the
    /// future is gone).
    outcome: Option<(c_int, *mut sys::redlock_lock_t, Option<String>)>,
    /// The task to wake when the outcome comes; written by each poll.
    waker: Option<Waker>,
    /// The future was dropped: a lock the callback still receives (a grant
    /// decided before the cancel) is released there, on the I/O thread.
    abandoned: bool,
}

/// Shared by the future and the callback: one `Arc` reference is given to
/// the library as the callback's `arg` and taken back by the callback, which
/// runs exactly once for an accepted call (the close included).
struct Slot {
    /// The C client; valid whenever the callback runs (a close ends every
    /// call before it frees the client).  Read-only.
    client: *mut sys::redlock_t,
    state: Mutex<State>,
}

// SAFETY: the raw pointers are the C library's thread-safe client and a lock
// handle handed over under the mutex, used by one side at a time.
unsafe impl Send for Slot {}
unsafe impl Sync for Slot {}

/// The callback form's callback: runs once, on the library's I/O thread.
unsafe extern "C" fn acquire_cb(status: c_int, lock: *mut sys::redlock_lock_t, arg: *mut c_void) {
    // SAFETY: arg is the reference Acquire::submit leaked for this call.
    let slot = Arc::from_raw(arg as *const Slot);
    let kind = ErrorKind::from_code(status);
    // On the I/O thread, the votes are those of the call whose callback runs.
    let votes = (status != 0 && kind.decided_a_round()).then(|| last_votes_of(slot.client));
    let waker = {
        let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.abandoned {
            if !lock.is_null() {
                // Granted before the cancel came, and nobody will take it.
                sys::redlock_unlock_async(slot.client, lock, None, ptr::null_mut());
            }
            return;
        }
        st.outcome = Some((status, lock, votes));
        st.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// A pending acquisition: a future of the [`Lock`].  The call is made when
/// the future is created (not at its first poll).  Dropping it before it
/// completed cancels the call: the library sends no more commands for it
/// (no retry, no wait for a release), and a round already out when the
/// cancel came releases what it set, so no key is left behind.  A lock
/// granted just before the cancel is released by this crate.
#[must_use = "an acquisition is canceled when dropped"]
pub struct Acquire {
    /// Keeps the C client open while the call may run.
    client: Client,
    /// `None` when the call was refused at submission (`refused` holds why).
    slot: Option<Arc<Slot>>,
    refused: Option<Error>,
    /// The call's id for `redlock_cancel` (0: none).
    id: u64,
    op: &'static str,
    resources: Vec<String>,
    /// The outcome was handed out: nothing to cancel.
    done: bool,
}

impl std::fmt::Debug for Acquire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acquire")
            .field("op", &self.op)
            .field("resources", &self.resources)
            .field("id", &self.id)
            .field("done", &self.done)
            .finish()
    }
}

impl Acquire {
    /// Calls `submit(cb, arg, &mut id)` (one `_ex` form) and wraps the call.
    pub(crate) fn submit<F>(
        client: &Client,
        op: &'static str,
        resources: Vec<String>,
        submit: F,
    ) -> Acquire
    where
        F: FnOnce(sys::redlock_lock_cb, *mut c_void, *mut u64) -> c_int,
    {
        let slot = Arc::new(Slot {
            client: client.raw(),
            state: Mutex::new(State {
                outcome: None,
                waker: None,
                abandoned: false,
            }),
        });
        let arg = Arc::into_raw(slot.clone()) as *mut c_void;
        let mut id = 0u64;
        let rc = submit(Some(acquire_cb), arg, &mut id);
        let mut a = Acquire {
            client: client.clone(),
            slot: None,
            refused: None,
            id,
            op,
            resources,
            done: false,
        };
        if rc != 0 {
            // SAFETY: refused: the library never calls back with arg.
            drop(unsafe { Arc::from_raw(arg as *const Slot) });
            a.refused = Some(a.error(rc, None));
        } else {
            a.slot = Some(slot);
        }
        a
    }

    /// A submission that failed before the library was asked (a NUL byte,
    /// a duration out of range).
    pub(crate) fn failed(
        client: &Client,
        op: &'static str,
        resources: Vec<String>,
        e: Error,
    ) -> Acquire {
        Acquire {
            client: client.clone(),
            slot: None,
            refused: Some(e),
            id: 0,
            op,
            resources,
            done: false,
        }
    }

    /// The call's id (the library's, for diagnostics; 0 when it was refused).
    pub fn id(&self) -> u64 {
        self.id
    }

    fn error(&self, rc: c_int, votes: Option<String>) -> Error {
        Error {
            kind: ErrorKind::from_code(rc),
            call: Some(Box::new(Call {
                op: self.op,
                resource: self.resources.first().cloned().unwrap_or_default(),
                votes,
                detail: None,
            })),
        }
    }
}

impl Future for Acquire {
    type Output = Result<Lock>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Lock>> {
        let this = &mut *self;
        if this.done {
            panic!("redlock: Acquire polled after it completed");
        }
        if let Some(e) = this.refused.take() {
            this.done = true;
            return Poll::Ready(Err(e));
        }
        let slot = this.slot.as_ref().expect("a submitted call has its slot");
        let (rc, lock, votes) = ready!(poll_outcome(&slot.state, cx, |st| (
            &mut st.outcome,
            &mut st.waker
        )));
        this.done = true;
        if rc != 0 {
            return Poll::Ready(Err(this.error(rc, votes)));
        }
        Poll::Ready(Ok(this.client.adopt(lock, this.resources.clone())))
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let slot = match &self.slot {
            Some(s) => s,
            None => return,
        };
        // SAFETY: live client (self.client), an id it gave.  0: the outcome
        // is ECANCELED and the library releases what was granted meanwhile.
        // REDLOCK_CANCEL_LATE: decided before; a lock granted so is ours.
        // ECLOSED cannot happen while this Client is alive.
        let rc = unsafe { sys::redlock_cancel(self.client.raw(), self.id) };
        let granted = {
            let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
            st.abandoned = true;
            st.waker = None;
            st.outcome.take()
        };
        if let Some((0, lock, _)) = granted {
            debug_assert!(rc == sys::REDLOCK_CANCEL_LATE);
            // Released here as any dropped Lock (unlock on this thread).
            drop(self.client.adopt(lock, self.resources.clone()));
        }
    }
}

/// The names of a multi-resource call, and their C strings (or why not).
pub(crate) fn names<I, S>(resources: I) -> (Vec<String>, Result<Vec<std::ffi::CString>>)
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let names: Vec<String> = resources
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .collect();
    let cs = names.iter().map(|s| super::cstring(s)).collect();
    (names, cs)
}
