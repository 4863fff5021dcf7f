//! Client::leader and Client::observe against real redis-server masters:
//! a hand-off by resign is seen through the release announcement (the poll
//! is far longer than the waits).  Every wait has a deadline.
mod support;

use redlock::{ElectionEvent, Leader, LeaderState};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use support::{wait_until, Masters};
const S5: Duration = Duration::from_secs(5);

/// The first view within `within` that `ok` accepts (others, such as a
/// half-done hand-off's `None`, are skipped).
fn next_view(rx: &Receiver<Leader>, within: Duration, ok: impl Fn(&Leader) -> bool) -> Leader {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(v) if ok(&v) => return v,
            Ok(_) => {}
            Err(e) => panic!("no such view within {within:?}: {e:?}"),
        }
    }
}

fn elected(rx: &Receiver<ElectionEvent>) -> u64 {
    match rx.recv_timeout(S5).expect("elected") {
        ElectionEvent::Elected(t) => t,
        ev => panic!("{ev:?}"),
    }
}

#[test]
fn leader_and_observe_see_a_hand_off() {
    let m = Masters::start(3);
    let a = m.client().owner("leader-a").open().unwrap();
    let b = m.client().owner("leader-b").open().unwrap();
    let watcher = m.client().open().unwrap();
    let name = "rs:observe";
    let ttl = Duration::from_secs(20);

    let v = watcher.leader(name).unwrap();
    assert_eq!(v.state, LeaderState::None, "{v:?}");
    assert_eq!((v.term, v.ttl_ms, v.owner.as_str()), (0, 0, ""));

    // A poll far beyond the waits below: what is seen in time came from an
    // announcement (or the first read).
    let (obs, views) = watcher.observe(name, Duration::from_secs(60)).unwrap();
    assert_eq!(obs.name(), name);
    let first = next_view(&views, S5, |_| true);
    assert_eq!(first.state, LeaderState::None, "{first:?}");

    let (ea, rxa) = a.elect(name, ttl).unwrap();
    let ta = elected(&rxa);
    // The first view of a new leader carries its exact term: the observer
    // reads again while a fence commit may be under way.
    let va = next_view(&views, S5, |v| v.state == LeaderState::Held);
    assert_eq!(va.owner, "leader-a", "{va:?}");
    assert_eq!(va.term, ta, "{va:?}");
    assert!(va.ttl_ms > 0 && va.ttl_ms <= 20_000, "{va:?}");
    assert!(
        wait_until(S5, || {
            let now = b.leader(name).unwrap();
            (now.state, now.owner.as_str(), now.term) == (LeaderState::Held, "leader-a", ta)
        }),
        "leader never gave a's term {ta}"
    );

    // Hand-off: b campaigns, a resigns; b wins at once (woken by the release).
    let (eb, rxb) = b.elect(name, ttl).unwrap();
    ea.resign().unwrap();
    let tb = elected(&rxb);
    assert!(tb > ta, "{tb} > {ta}");
    // The hand-off as the observer sees it: b leads, in a term after a's
    // (at most b's own, as above).
    let vb = next_view(&views, S5, |v| {
        v.state == LeaderState::Held && v.owner == "leader-b"
    });
    assert_eq!(vb.term, tb, "{vb:?}");
    assert!(
        wait_until(S5, || b.leader(name).unwrap().term == tb),
        "Leader never gave b's term {tb}"
    );

    obs.stop().unwrap();
    // Stopped: the receiver disconnects once the views sent are read.
    let deadline = Instant::now() + S5;
    loop {
        match views.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(_) => {}
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => panic!("receiver not disconnected by stop"),
        }
    }
    eb.resign().unwrap();
    assert!(watcher.leader("").is_err());
}

#[test]
fn observer_dropped_and_after_the_client() {
    let m = Masters::start(3);
    let c = m.client().open().unwrap();
    let (obs, views) = c.observe("rs:observe:drop", Duration::ZERO).unwrap();
    next_view(&views, S5, |_| true);
    drop(obs); // stops it
    assert!(matches!(
        views.recv_timeout(S5),
        Err(RecvTimeoutError::Disconnected)
    ));
    // An observer keeps its client alive: dropping the client first is fine.
    let (obs, views) = c.observe("rs:observe:drop", Duration::ZERO).unwrap();
    drop(c);
    next_view(&views, S5, |_| true);
    drop(obs);
}
