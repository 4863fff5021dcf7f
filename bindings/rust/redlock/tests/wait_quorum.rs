//! A waited acquisition whose wait ran out while too few masters answered
//! fails with `ErrorKind::NoQuorum` (an outage), not `TimedOut`, which stays
//! for a resource still held by another.
mod support;

use redlock::ErrorKind;
use std::time::Duration;
use support::{block_on, Masters, SIGCONT, SIGSTOP};

const TTL: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_millis(300);

#[test]
fn wait_ends_no_quorum_vs_held() {
    let m = Masters::start(3);
    let a = m.client().open().unwrap();
    let b = m
        .client()
        .timeouts(Duration::from_secs(1), Duration::from_millis(50))
        .open()
        .unwrap();

    let _held = a.lock("rs:wait:held", Duration::from_secs(30)).unwrap();
    let e = b.lock_wait("rs:wait:held", TTL, WAIT).unwrap_err();
    assert_eq!(e, ErrorKind::TimedOut, "held: {e}");
    assert_eq!(e.op(), Some("lock_wait"));
    let e = block_on(b.lock_wait_async("rs:wait:held", TTL, WAIT)).unwrap_err();
    assert_eq!(e, ErrorKind::TimedOut, "held, async: {e}");

    m.signal(0, SIGSTOP);
    m.signal(1, SIGSTOP);
    let results = [
        ("lock_wait", b.lock_wait("rs:wait:down", TTL, WAIT).err()),
        (
            "lock_wait",
            block_on(b.lock_wait_async("rs:wait:down", TTL, WAIT)).err(),
        ),
        ("semaphore", b.semaphore("rs:wait:sem", 2, TTL, WAIT).err()),
        (
            "rwlock_write",
            b.rwlock_write("rs:wait:rw", TTL, WAIT).err(),
        ),
    ];
    m.signal(0, SIGCONT);
    m.signal(1, SIGCONT);
    for (op, e) in results {
        let e = e.unwrap_or_else(|| panic!("{op}: acquired with two masters of three stopped"));
        assert_eq!(e, ErrorKind::NoQuorum, "{op}: {e}");
        assert_eq!(e.op(), Some(op), "{e}");
        assert!(e.to_string().contains("no quorum"), "{op}: {e}");
    }
}
