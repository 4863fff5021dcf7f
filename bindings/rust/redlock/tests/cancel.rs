//! The futures of `Client::*_async` against real masters: their outcomes and
//! errors (op, resource, votes), and cancellation by drop: a dropped wait
//! sends no further lock command to any master (INFO commandstats: SET,
//! EVAL, EVALSHA, which count the commands scripts run too) and leaves no
//! key; a dropped acquisition whose round is out releases what that round
//! wins; a dropped future whose lock was granted releases it.
mod support;

use redlock::{Client, ErrorKind};
use std::time::Duration;
use support::{block_on, cmd, poll_once, wait_until, Masters, SIGCONT, SIGSTOP};

const TTL: Duration = Duration::from_secs(30);
const S5: Duration = Duration::from_secs(5);
/// How long the masters are watched for a stray command (the bound of an
/// observation, not a wait for an outcome).
const QUIET: Duration = Duration::from_secs(1);

/// Lock commands each master has run.
fn lock_commands(m: &Masters) -> Vec<u64> {
    m.ports
        .iter()
        .map(|&p| {
            let info = info_commandstats(p);
            [
                "cmdstat_set:calls=",
                "cmdstat_evalsha:calls=",
                "cmdstat_eval:calls=",
            ]
            .iter()
            .map(|k| calls_of(&info, k))
            .sum()
        })
        .collect()
}

fn set_calls(port: u16) -> u64 {
    calls_of(&info_commandstats(port), "cmdstat_set:calls=")
}

fn info_commandstats(port: u16) -> String {
    cmd(port, &["INFO", "commandstats"]).expect("INFO commandstats")
}

fn calls_of(info: &str, key: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix(key))
        .map_or(0, |rest| {
            rest.split(',').next().unwrap_or("0").parse().unwrap_or(0)
        })
}

/// Fails the test if a master runs a lock command within QUIET.
fn assert_quiet(m: &Masters, what: &str) {
    let base = lock_commands(m);
    if wait_until(QUIET, || lock_commands(m) != base) {
        panic!(
            "{what}: a master ran a lock command ({base:?} -> {:?})",
            lock_commands(m)
        );
    }
}

/// No request of this client is queued or unanswered on any master, so that
/// what a quorum decided before does not trail into a quiet window.
fn idle(c: &Client) -> bool {
    let text = c.stats_prometheus().unwrap();
    text.lines()
        .filter(|l| l.starts_with("redlock_master_queued_requests{"))
        .all(|l| l.rsplit(' ').next() == Some("0"))
}

/// Channels about `res` that some connection subscribes to, per master.
fn subscribed(m: &Masters, res: &str) -> Vec<String> {
    m.all(&["PUBSUB", "CHANNELS", &format!("*{res}*")])
}

fn exists(m: &Masters, res: &str) -> Vec<String> {
    m.all(&["EXISTS", res])
}

#[test]
fn dropped_wait_sends_nothing_more_and_leaves_no_key() {
    const RES: &str = "rs:cancel:wait";
    let m = Masters::start(3);
    let holder = m.client().open().unwrap();
    let held = holder.lock(RES, TTL).unwrap();
    // Waits by release notices, with a fallback retry far beyond the test.
    let w = m
        .client()
        .retry(-1, Duration::from_secs(10), Duration::ZERO)
        .open()
        .unwrap();
    let mut fut = w.lock_wait_async(RES, TTL, Duration::from_secs(60));
    assert_ne!(fut.id(), 0);
    assert!(poll_once(&mut fut).is_pending());
    // Its first attempt was refused: it waits, subscribed on every master.
    assert!(wait_until(S5, || subscribed(&m, RES) == ["*1"; 3]));
    assert!(wait_until(S5, || idle(&holder) && idle(&w)));
    let base = lock_commands(&m);
    drop(fut);
    assert!(
        wait_until(S5, || subscribed(&m, RES) == ["*0"; 3]),
        "the dropped wait still subscribes: {:?}",
        subscribed(&m, RES)
    );
    assert_eq!(
        lock_commands(&m),
        base,
        "a lock command right after the drop"
    );
    assert_quiet(&m, "dropped wait");
    // The holder is untouched, and its release is not taken by the waiter.
    assert_eq!(m.all(&["GET", RES]), vec![held.value().to_string(); 3]);
    held.unlock().unwrap();
    assert!(wait_until(S5, || idle(&holder)));
    assert_quiet(&m, "release after the dropped wait");
    assert_eq!(exists(&m, RES), ["0"; 3]);
    // The stats count the call once, as canceled.
    let stats = w.stats().unwrap();
    assert!(stats.contains("canceled"), "{stats}");
}

#[test]
fn dropped_round_in_flight_releases_what_it_wins() {
    const RES: &str = "rs:cancel:inflight";
    let m = Masters::start(3);
    // The round must outlast the masters' stop, so that their replies are
    // late yes votes, not timeouts.
    let c = m
        .client()
        .timeouts(Duration::from_secs(1), S5)
        .retry(3, Duration::from_millis(10), Duration::ZERO)
        .open()
        .unwrap();
    let sets0: Vec<u64> = m.ports.iter().map(|&p| set_calls(p)).collect();
    m.signal(0, SIGSTOP);
    m.signal(1, SIGSTOP);
    let mut fut = c.lock_async(RES, TTL);
    assert!(poll_once(&mut fut).is_pending());
    // The round is out: master 2 took the key; 0 and 1 have it unread.
    assert!(wait_until(S5, || cmd(m.ports[2], &["EXISTS", RES])
        .is_ok_and(|r| r == "1")));
    drop(fut);
    m.signal(0, SIGCONT);
    m.signal(1, SIGCONT);
    // The stopped masters run the SET (a quorum, won after the cancel), and
    // the release that follows: no key is left anywhere.
    assert!(
        wait_until(S5, || exists(&m, RES) == ["0"; 3]),
        "{:?}",
        exists(&m, RES)
    );
    assert!(wait_until(S5, || idle(&c)));
    let sets: Vec<u64> = m.ports.iter().map(|&p| set_calls(p)).collect();
    let one_more: Vec<u64> = sets0.iter().map(|s| s + 1).collect();
    assert_eq!(sets, one_more, "one SET per master for one attempt");
    assert_quiet(&m, "dropped round");
    // The client still works, and the resource is free.
    c.try_lock(RES, TTL).unwrap().unlock().unwrap();
}

#[test]
fn dropped_future_of_a_granted_lock_releases_it() {
    const RES: &str = "rs:cancel:granted";
    let m = Masters::start(3);
    let c = m.client().open().unwrap();
    let fut = c.lock_async(RES, TTL);
    // Granted (or about to be) while nobody polls the future.
    assert!(wait_until(S5, || exists(&m, RES) == ["1"; 3]));
    drop(fut);
    assert!(
        wait_until(S5, || exists(&m, RES) == ["0"; 3]),
        "{:?}",
        exists(&m, RES)
    );
    c.try_lock(RES, TTL).unwrap();
}

#[test]
fn futures_acquire_and_fail_with_op_resource_and_votes() {
    let m = Masters::start(3);
    let a = m.client().open().unwrap();
    let b = m.client().open().unwrap();
    let l = block_on(a.lock_async("rs:fut", S5)).unwrap();
    assert_eq!(l.resource(), "rs:fut");
    assert_eq!(m.all(&["GET", "rs:fut"]), vec![l.value().to_string(); 3]);

    let err = block_on(b.lock_async("rs:fut", S5)).unwrap_err();
    assert_eq!(err, ErrorKind::Locked);
    assert_eq!((err.op(), err.resource()), (Some("lock"), Some("rs:fut")));
    // The votes of the call's own round, read on the I/O thread.
    let v = err.verdicts();
    assert_eq!(v.len(), 3, "{err:?}");
    // A round is decided by a quorum: the last master may still be pending.
    let refused = v.iter().filter(|v| v.verdict == "refused").count();
    assert!(refused >= 2, "{v:?}");
    assert!(
        v.iter()
            .all(|v| v.verdict == "refused" || v.verdict == "pending"),
        "{v:?}"
    );
    assert!(!err.is_quarantined());
    assert!(err.to_string().starts_with("lock \"rs:fut\": "), "{err}");

    let err = block_on(b.lock_wait_async("rs:fut", S5, Duration::from_millis(200))).unwrap_err();
    assert_eq!(err, ErrorKind::TimedOut);
    assert_eq!(err.op(), Some("lock_wait"));
    assert!(err.votes().is_some(), "{err:?}");

    let many = block_on(b.lock_many_async(["rs:fut:1", "rs:fut:2"], S5)).unwrap();
    assert_eq!(many.resources(), ["rs:fut:1", "rs:fut:2"]);
    let err = block_on(a.lock_many_async(["rs:fut:2", "rs:fut:3"], S5)).unwrap_err();
    assert_eq!(err, ErrorKind::Locked);
    assert_eq!(
        (err.op(), err.resource()),
        (Some("lock_many"), Some("rs:fut:2"))
    );

    let p = block_on(a.semaphore_async("rs:fut:sem", 1, S5, Duration::ZERO)).unwrap();
    let err = block_on(b.semaphore_async("rs:fut:sem", 1, S5, Duration::ZERO)).unwrap_err();
    assert_eq!(err, ErrorKind::Locked);
    drop(p);
    let r = block_on(a.rwlock_read_async("rs:fut:rw", S5, Duration::ZERO)).unwrap();
    let err = block_on(b.rwlock_write_async("rs:fut:rw", S5, Duration::ZERO)).unwrap_err();
    assert_eq!(err.op(), Some("rwlock_write"));
    drop(r);

    // Refused before the library is asked: the future says so at once.
    let err = block_on(a.lock_async("rs:\0nul", S5)).unwrap_err();
    assert_eq!(err, ErrorKind::InvalidArgument);
    let bad = a.lock_async("", S5);
    assert_eq!(bad.id(), 0);
    assert_eq!(block_on(bad).unwrap_err(), ErrorKind::InvalidArgument);

    l.unlock().unwrap();
    drop(many);
    for r in ["rs:fut", "rs:fut:1", "rs:fut:2"] {
        assert_eq!(exists(&m, r), ["0"; 3]);
    }
}

#[test]
fn quarantined_error_of_a_future_says_so() {
    let m = Masters::start(3);
    // Quarantine left on (fresh masters), outlasting the test.
    let c = Client::builder()
        .nodes(m.uris())
        .retry(0, Duration::ZERO, Duration::ZERO)
        .max_ttl(Duration::from_secs(600))
        .open()
        .unwrap();
    let err = block_on(c.lock_async("rs:fut:fresh", S5)).unwrap_err();
    assert_eq!(err, ErrorKind::NoQuorum);
    assert!(err.is_quarantined(), "{err:?}");
    let v = err.verdicts();
    assert_eq!(v.len(), 3);
    // Decided by a quorum of "no": the last master may still be pending.
    assert!(
        v.iter().filter(|v| v.is_quarantined()).count() >= 2,
        "{v:?}"
    );
    for vote in &v {
        if vote.verdict == "pending" {
            continue;
        }
        assert!(vote.is_quarantined(), "{vote:?}");
        let d = vote.detail.as_deref().unwrap_or("");
        assert!(
            d.starts_with("restart quarantine: ") && d.ends_with(" ms left"),
            "{d}"
        );
    }
    let msg = err.to_string();
    assert!(msg.starts_with("lock \"rs:fut:fresh\": "), "{msg}");
    assert!(msg.contains("quarantined"), "{msg}");
}

// Compile-time check: a future of this crate can be sent to another thread
// (a multi-threaded executor).
#[allow(dead_code)]
fn acquire_is_send() {
    fn is<T: Send + Unpin>() {}
    is::<redlock::Acquire>();
}

/// extend_async and unlock_async submit their round and return: the thread
/// that polls them is not held while the masters are slow to answer (two of
/// three stopped), and each tells its outcome once they answer.
#[test]
fn extend_and_unlock_async_do_not_block() {
    const RES: &str = "rs:async:round";
    let m = Masters::start(3);
    let c = m
        .client()
        .timeouts(Duration::from_secs(1), Duration::from_secs(30))
        .open()
        .unwrap();
    let l = c.lock(RES, TTL).unwrap();
    let rx = l.watch().unwrap();
    m.signal(0, SIGSTOP);
    m.signal(1, SIGSTOP);
    let mut ext = l.extend_async(TTL);
    // A blocking extension would have waited for the masters (or the 30 s
    // request timeout) before returning.
    assert!(poll_once(&mut ext).is_pending());
    m.signal(0, SIGCONT);
    m.signal(1, SIGCONT);
    block_on(ext).unwrap();
    assert!(!l.is_lost());
    m.signal(0, SIGSTOP);
    m.signal(1, SIGSTOP);
    let mut un = l.unlock_async();
    assert!(poll_once(&mut un).is_pending());
    m.signal(0, SIGCONT);
    m.signal(1, SIGCONT);
    block_on(un).unwrap();
    assert_eq!(exists(&m, RES), ["0"; 3]);
    // The watch ended with the release, without a loss.
    assert!(rx.recv().is_err());

    // A lock taken over: the extension's error names the call, with votes.
    let l = c.lock(RES, TTL).unwrap();
    for &p in &m.ports {
        cmd(p, &["SET", RES, "someone-else"]).unwrap();
    }
    let e = block_on(l.extend_async(TTL)).unwrap_err();
    assert_eq!(e, ErrorKind::Lost);
    assert_eq!((e.op(), e.resource()), (Some("extend"), Some(RES)));
    assert!(e.votes().is_some(), "{e:?}");
    let e = block_on(l.unlock_async()).unwrap_err();
    assert_eq!(e.op(), Some("unlock"));
    assert_eq!(cmd(m.ports[0], &["GET", RES]).unwrap(), "someone-else");
}
