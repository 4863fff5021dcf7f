//! The test kit (`redlock::testing::FakeMasters`), with no redis-server:
//! two clients exclude each other on three fakes; killing two gives
//! NoQuorum; virtual time lets a 30 s lease lapse at once; modes, pause and
//! failover act as documented; fencing tokens rise.
use redlock::testing::{FakeMasters, Mode, Options};
use redlock::{Client, ErrorKind};
use std::time::Duration;

const TTL: Duration = Duration::from_secs(10);

fn open(fakes: &FakeMasters, fencing: bool) -> Client {
    Client::builder()
        .nodes(fakes.nodes())
        .quarantine(false)
        .fencing(fencing)
        .retry(0, Duration::from_millis(10), Duration::from_millis(10))
        .open()
        .expect("open")
}

#[test]
fn exclusion_and_no_quorum() {
    let fakes = FakeMasters::new(3).unwrap();
    assert!(fakes.nodes()[0].starts_with("unix://"));
    let (a, b) = (open(&fakes, false), open(&fakes, false));
    let held = a.lock("job", TTL).unwrap();
    assert_eq!(fakes.key_count("job").unwrap(), 3);
    assert_eq!(
        b.try_lock("job", TTL).unwrap_err().kind(),
        ErrorKind::Locked
    );
    held.unlock().unwrap();
    fakes.kill(0).unwrap();
    fakes.kill(1).unwrap();
    assert_eq!(b.lock("job", TTL).unwrap_err().kind(), ErrorKind::NoQuorum);
}

#[test]
fn virtual_time() {
    let fakes = FakeMasters::with_options(
        3,
        Options {
            virtual_time: true,
            ..Options::default()
        },
    )
    .unwrap();
    let (a, b) = (open(&fakes, false), open(&fakes, false));
    let held = a.lock("lease", Duration::from_secs(30)).unwrap();
    fakes.advance(Duration::from_millis(30_001)).unwrap();
    assert_eq!(fakes.key_count("lease").unwrap(), 0);
    let other = b.try_lock("lease", Duration::from_secs(30)).unwrap();
    assert_eq!(
        held.extend(Duration::from_secs(30)).unwrap_err().kind(),
        ErrorKind::Lost
    );
    other.unlock().unwrap();
}

#[test]
fn modes_and_faults() {
    let fakes = FakeMasters::with_options(
        3,
        Options {
            tcp: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(fakes.nodes()[0].starts_with("redis://127.0.0.1:"));
    let (a, b) = (open(&fakes, false), open(&fakes, false));
    fakes.set_mode(None, Mode::Refuse).unwrap();
    assert_eq!(a.try_lock("m", TTL).unwrap_err().kind(), ErrorKind::Locked);
    fakes.set_mode(None, Mode::Grant).unwrap();
    let x = a.lock("m", TTL).unwrap();
    let y = b.try_lock("m", TTL).unwrap();
    x.unlock().unwrap();
    y.unlock().unwrap();
    fakes.set_mode(None, Mode::Normal).unwrap();
    fakes.pause(2).unwrap();
    let held = a.lock("p", TTL).unwrap();
    assert!(!fakes.has_key(2, "p").unwrap());
    fakes.resume(2).unwrap();
    fakes.failover(1, Duration::from_secs(60)).unwrap();
    assert!(!fakes.has_key(1, "p").unwrap());
    assert!(fakes.drop_key(0, "p").unwrap());
    drop(held);
}

#[test]
fn fencing_tokens_rise() {
    let fakes = FakeMasters::new(3).unwrap();
    let a = open(&fakes, true);
    let first = a.lock("f", TTL).unwrap();
    let f1 = first.fence();
    first.unlock().unwrap();
    let second = a.lock("f", TTL).unwrap();
    assert!(second.fence() > f1);
    second.unlock().unwrap();
}

#[test]
fn bad_input() {
    assert_eq!(
        FakeMasters::new(0).err().unwrap().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        FakeMasters::new(17).err().unwrap().kind(),
        ErrorKind::InvalidArgument
    );
    let fakes = FakeMasters::new(1).unwrap();
    assert_eq!(
        fakes.kill(1).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        fakes.drop_key(0, "a\0b").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    fakes.kill(0).unwrap();
    assert_eq!(
        fakes.pause(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
