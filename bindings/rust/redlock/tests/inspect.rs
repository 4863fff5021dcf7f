//! Owner labels, inspect, revoke and bounded holds against real
//! redis-server masters (each test starts its own three, stopped by PID).
//! Every wait has a deadline.
mod support;

use redlock::{ElectionEvent, ErrorKind, Kind, LOST_MAX_HOLD, MAX_OWNER};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use support::{cmd, wait_until, Masters};
const S5: Duration = Duration::from_secs(5);

#[test]
fn owner_label_round_trip_seen_by_inspect() {
    let m = Masters::start(3);
    let a = m.client().owner("rs-worker-1").open().unwrap();
    let l = a.lock("rs:owner", S5).unwrap();
    assert_eq!(l.owner(), "rs-worker-1");
    assert!(l.value().ends_with("~rs-worker-1"), "{}", l.value());
    assert_eq!(l.value().len(), 32 + 1 + "rs-worker-1".len());
    assert_eq!(m.all(&["GET", "rs:owner"]), vec![l.value().to_string(); 3]);

    // Another client, with no label of its own, sees it.
    let b = m.client().open().unwrap();
    let i = b.inspect("rs:owner", Kind::Lock).unwrap();
    assert!(i.held && i.agreed, "{i:?}");
    assert_eq!((i.name.as_str(), i.kind.as_str()), ("rs:owner", "lock"));
    assert_eq!(i.owner.as_deref(), Some("rs-worker-1"));
    assert_eq!(i.value.as_deref(), Some(l.value()));
    assert_eq!((i.quorum, i.count), (2, 1));
    let (lo, hi) = (i.ttl_ms_min.unwrap(), i.ttl_ms_max.unwrap());
    assert!(0 < lo && lo <= hi && hi <= 5000, "{lo}..{hi}");
    assert_eq!(i.holders.len(), 1);
    assert_eq!(i.holders[0].owner.as_deref(), Some("rs-worker-1"));
    assert_eq!(i.masters.len(), 3);
    for mv in &i.masters {
        assert_eq!(mv.state, "holds", "{mv:?}");
        assert_eq!(mv.owner.as_deref(), Some("rs-worker-1"));
        assert_eq!(mv.holds, Some(1));
        assert!(mv.ttl_ms.unwrap() > 0);
    }
    assert!(i.raw.contains("\"owner\":\"rs-worker-1\""), "{}", i.raw);

    // Without a label: "" and a bare value.
    let lb = b.lock("rs:owner:none", S5).unwrap();
    assert_eq!((lb.owner(), lb.value().len()), ("", 32));

    // Refused labels.
    for bad in [
        "has~tilde".to_string(),
        "has space".to_string(),
        "x".repeat(MAX_OWNER + 1),
    ] {
        let err = m.client().owner(bad.clone()).open().unwrap_err();
        assert_eq!(err, ErrorKind::InvalidArgument, "{bad:?}");
    }
}

#[test]
fn inspect_free_minority_semaphore_rwlock_election() {
    let m = Masters::start(3);
    let a = m.client().owner("rs-insp").open().unwrap();
    let b = m.client().open().unwrap();

    let i = b.inspect("rs:insp:free", Kind::Lock).unwrap();
    assert!(!i.held && i.agreed && i.count == 0, "{i:?}");
    assert_eq!((i.owner, i.ttl_ms_max), (None, None));

    // Held on one master only (a minority): not held, not agreed.
    cmd(
        m.ports[0],
        &["SET", "rs:insp:min", "x~someone", "PX", "60000"],
    )
    .unwrap();
    let i = b.inspect("rs:insp:min", Kind::Lock).unwrap();
    assert!(!i.held && !i.agreed, "{i:?}");
    assert_eq!(i.masters[0].state, "other");

    let p = a.semaphore("rs:insp:sem", 3, S5, Duration::ZERO).unwrap();
    let i = b.inspect("rs:insp:sem", Kind::Semaphore).unwrap();
    assert!(i.held && i.kind == "semaphore" && i.count == 1, "{i:?}");
    let h = &i.holders[0];
    assert_eq!(h.owner.as_deref(), Some("rs-insp"));
    assert_eq!(h.value.as_deref(), Some(p.value()));
    assert!(
        p.resource().ends_with(&format!(":sem:{}", h.slot.unwrap())),
        "{} / {h:?}",
        p.resource()
    );
    drop(p);

    let r1 = a.rwlock_read("rs:insp:rw", S5, Duration::ZERO).unwrap();
    let r2 = b.rwlock_read("rs:insp:rw", S5, Duration::ZERO).unwrap();
    let i = b.inspect("rs:insp:rw", Kind::RwLock).unwrap();
    assert!(i.held && i.kind == "rwlock" && i.count == 2, "{i:?}");
    assert!(i.holders.iter().all(|h| h.mode.as_deref() == Some("read")));
    drop((r1, r2));
    let w = a
        .rwlock_write("rs:insp:rw", S5, Duration::from_secs(2))
        .unwrap();
    let i = b.inspect("rs:insp:rw", Kind::RwLock).unwrap();
    assert!(i.held && i.count == 1, "{i:?}");
    assert_eq!(i.holders[0].mode.as_deref(), Some("write"));
    assert_eq!(i.holders[0].owner.as_deref(), Some("rs-insp"));
    drop(w);

    let (e, rx) = a.elect("rs:insp:elect", S5).unwrap();
    let term = match rx.recv_timeout(S5).unwrap() {
        ElectionEvent::Elected(t) => t,
        ev => panic!("{ev:?}"),
    };
    let i = b.inspect("rs:insp:elect", Kind::Election).unwrap();
    assert!(i.held && i.kind == "election", "{i:?}");
    assert_eq!(i.owner.as_deref(), Some("rs-insp"));
    assert!(i.fence.unwrap() >= term, "{:?} < {term}", i.fence);
    e.resign().unwrap();

    assert_eq!(
        b.inspect("", Kind::Lock).unwrap_err(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(b.inspect("a\0b", Kind::Lock).unwrap_err().op(), None);
}

#[test]
fn revoke_ends_the_hold_and_raises_the_fence() {
    let m = Masters::start(3);
    let holder = m.client().fencing(true).owner("stuck").open().unwrap();
    let admin = m.client().fencing(true).open().unwrap();
    let l = holder.lock("rs:revoke", Duration::from_secs(1)).unwrap();
    let lost = l.watch().unwrap();
    let fence = admin.revoke("rs:revoke").unwrap();
    assert!(fence > l.fence(), "{fence} <= {}", l.fence());
    let err = lost.recv_timeout(S5).expect("the holder's watch reports");
    assert_eq!(err, ErrorKind::Lost);
    assert!(l.is_lost());
    // The next holder's token is above the revoke's.
    let n = admin.lock("rs:revoke", Duration::from_secs(1)).unwrap();
    assert!(n.fence() > fence, "{} <= {fence}", n.fence());
    drop(n);
    let err = admin.revoke("").unwrap_err();
    assert_eq!(err, ErrorKind::InvalidArgument);
}

#[test]
fn bounded_watch_ends_with_max_hold_and_frees_the_lock() {
    let m = Masters::start(3);
    let c = m.client().open().unwrap();
    let other = m.client().open().unwrap();
    let before = Instant::now();
    // A TTL far beyond the bound: the key goes by the release, not by expiry.
    let l = c.lock("rs:bounded", Duration::from_secs(10)).unwrap();
    assert_eq!(
        l.watch_bounded(Duration::ZERO).unwrap_err(),
        ErrorKind::InvalidArgument
    );
    let rx = l.watch_bounded(Duration::from_millis(1200)).unwrap();
    let err = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("bound reached");
    assert_eq!(err, ErrorKind::MaxHold);
    assert_eq!(err.code(), LOST_MAX_HOLD);
    assert_eq!(err.name(), "REDLOCK_LOST_MAX_HOLD");
    assert!(!err.is_temporary());
    // Counted from the grant, which came after `before` (1 s: room for the
    // loop's millisecond clock).
    assert!(
        before.elapsed() >= Duration::from_secs(1),
        "ended after {:?}",
        before.elapsed()
    );
    assert!(matches!(
        rx.recv_timeout(Duration::from_millis(100)),
        Err(RecvTimeoutError::Disconnected)
    ));
    assert!(l.is_lost());
    // Released on every master (the release may still be on its way when
    // the callback runs), long before its TTL would have ended it.
    assert!(
        wait_until(S5, || m.all(&["EXISTS", "rs:bounded"]) == vec!["0"; 3]),
        "key left after the bound"
    );
    let n = other
        .try_lock("rs:bounded", Duration::from_secs(1))
        .unwrap();
    drop(n);
    // Still the caller's to free; the lock is gone.
    assert_eq!(l.unlock().unwrap_err(), ErrorKind::Lost);
}

#[test]
fn bounded_election_ends_terms_and_campaigns_again() {
    let m = Masters::start(3);
    let c = m.client().open().unwrap();
    assert_eq!(
        c.elect_bounded("rs:elect:b", Duration::from_secs(1), Duration::ZERO)
            .unwrap_err(),
        ErrorKind::InvalidArgument
    );
    let (e, rx) = c
        .elect_bounded(
            "rs:elect:b",
            Duration::from_secs(1),
            Duration::from_millis(700),
        )
        .unwrap();
    let t1 = match rx.recv_timeout(S5).unwrap() {
        ElectionEvent::Elected(t) => t,
        ev => panic!("{ev:?}"),
    };
    match rx.recv_timeout(S5).unwrap() {
        ElectionEvent::Lost(err) => assert_eq!(err, ErrorKind::MaxHold),
        ev => panic!("{ev:?}"),
    }
    // Alone, it wins a later term.
    match rx.recv_timeout(S5).unwrap() {
        ElectionEvent::Elected(t2) => assert!(t2 > t1, "{t2} > {t1}"),
        ev => panic!("{ev:?}"),
    }
    e.resign().unwrap();
}
