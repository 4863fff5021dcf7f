//! Extension and release as futures: [`Round`], what `Lock::extend_async`
//! and `Lock::unlock_async` return.  The call is the library's callback form
//! (`redlock_extend_async`, `redlock_unlock_async`): the executor thread
//! only submits it, and the library's I/O thread completes it and wakes the
//! task, so an async program never blocks on the masters' answers.
use super::{
    last_votes_of, poll_outcome, sys, Call, Client, Error, ErrorKind, Lock, Result, WatchPtr,
};
use std::future::Future;
use std::marker::PhantomData;
use std::os::raw::{c_int, c_void};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll, Waker};

struct State {
    /// The status, with the votes of its round when it failed after one;
    /// `None` until the callback ran.
    outcome: Option<(c_int, Option<String>)>,
    waker: Option<Waker>,
    /// A release's watch state: freed by the callback, after which the
    /// library calls no lost callback for the lock.
    watch: Option<WatchPtr>,
}

/// Shared by the future and the callback (one `Arc` reference is the
/// callback's `arg`, taken back by the callback, which runs exactly once for
/// an accepted call).
struct Slot {
    /// The C client, valid whenever the callback runs.  Read-only.
    client: *mut sys::redlock_t,
    /// Whether a failure carries the round's votes (not for an extension of
    /// a lock already lost, which is refused without a round).
    votes: bool,
    state: Mutex<State>,
}

// SAFETY: the client pointer is the C library's thread-safe client; the rest
// is under the mutex.
unsafe impl Send for Slot {}
unsafe impl Sync for Slot {}

unsafe extern "C" fn done_cb(status: c_int, arg: *mut c_void) {
    // SAFETY: arg is the reference Round::submit leaked for this call.
    let slot = Arc::from_raw(arg as *const Slot);
    let kind = ErrorKind::from_code(status);
    // On the I/O thread, the votes are those of the call whose callback runs.
    let votes =
        (status != 0 && slot.votes && kind.decided_a_round()).then(|| last_votes_of(slot.client));
    let waker = {
        let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        st.outcome = Some((status, votes));
        if let Some(w) = st.watch.take() {
            // SAFETY: the release is over: no lost callback uses it any more.
            drop(Box::from_raw(w.0));
        }
        st.waker.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
}

/// A pending extension or release: a future of its outcome.  The call is
/// made when the future is created (not at its first poll); it is one round,
/// which cannot be taken back, so dropping the future only stops waiting for
/// it (the round ends by itself within the request timeout).  An extension's
/// future borrows its [`Lock`], which therefore outlives it.
#[must_use = "the call is made already; the future tells its outcome"]
pub struct Round<'a> {
    /// Keeps the C client open while the call may run.
    _client: Client,
    slot: Option<Arc<Slot>>,
    refused: Option<Error>,
    op: &'static str,
    resource: String,
    done: bool,
    _lock: PhantomData<&'a Lock>,
}

impl std::fmt::Debug for Round<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Round")
            .field("op", &self.op)
            .field("resource", &self.resource)
            .field("done", &self.done)
            .finish()
    }
}

impl<'a> Round<'a> {
    /// Calls `submit(cb, arg)` (one `redlock_done_cb` form) and wraps the call.
    pub(crate) fn submit<F>(
        client: &Client,
        op: &'static str,
        resource: &str,
        votes: bool,
        watch: Option<WatchPtr>,
        submit: F,
    ) -> Round<'a>
    where
        F: FnOnce(sys::redlock_done_cb, *mut c_void) -> c_int,
    {
        let slot = Arc::new(Slot {
            client: client.raw(),
            votes,
            state: Mutex::new(State {
                outcome: None,
                waker: None,
                watch,
            }),
        });
        let arg = Arc::into_raw(slot.clone()) as *mut c_void;
        let rc = submit(Some(done_cb), arg);
        let mut r = Round::failed(client, op, resource, None);
        if rc != 0 {
            // SAFETY: refused: the library never calls back with arg.
            drop(unsafe { Arc::from_raw(arg as *const Slot) });
            // A refused release: the handle was stale, so no lost callback
            // can use the watch state either.
            if let Some(w) = slot
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .watch
                .take()
            {
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(w.0) });
            }
            r.refused = Some(r.error(rc, None));
        } else {
            r.slot = Some(slot);
        }
        r
    }

    /// A call refused before the library was asked (`e`), or, with `None`,
    /// one about to be submitted.
    pub(crate) fn failed(
        client: &Client,
        op: &'static str,
        resource: &str,
        e: Option<Error>,
    ) -> Round<'a> {
        Round {
            _client: client.clone(),
            slot: None,
            refused: e,
            op,
            resource: resource.to_owned(),
            done: false,
            _lock: PhantomData,
        }
    }

    fn error(&self, rc: c_int, votes: Option<String>) -> Error {
        Error {
            kind: ErrorKind::from_code(rc),
            call: Some(Box::new(Call {
                op: self.op,
                resource: self.resource.clone(),
                votes,
                detail: None,
            })),
        }
    }
}

impl Future for Round<'_> {
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = &mut *self;
        if this.done {
            panic!("redlock: Round polled after it completed");
        }
        if let Some(e) = this.refused.take() {
            this.done = true;
            return Poll::Ready(Err(e));
        }
        let slot = match this.slot.as_ref() {
            Some(s) => s,
            None => {
                this.done = true;
                return Poll::Ready(Ok(())); // nothing to do (released already)
            }
        };
        let (rc, votes) = ready!(poll_outcome(&slot.state, cx, |st| (
            &mut st.outcome,
            &mut st.waker
        )));
        this.done = true;
        if rc != 0 {
            return Poll::Ready(Err(this.error(rc, votes)));
        }
        Poll::Ready(Ok(()))
    }
}
