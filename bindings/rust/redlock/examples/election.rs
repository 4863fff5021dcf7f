//! Leader election: two nodes campaign, the leader's lease is watched (kept
//! extended) while it leads, and it hands over by resigning; the next
//! leader's term is larger, so a store that checks terms (as fenced_write
//! checks tokens) refuses the old leader.  Then a lock kept by a watch past
//! its TTL.
//!
//! ```sh
//! cargo run --example election -- redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//! ```
//!
//! Run by tests/examples.rs.
use redlock::{Client, ElectionEvent, ErrorKind};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// The next term won, waiting at most 10 s.
fn elected(events: &Receiver<ElectionEvent>) -> redlock::Result<u64> {
    loop {
        match events.recv_timeout(Duration::from_secs(10)) {
            Ok(ElectionEvent::Elected(term)) => return Ok(term),
            Ok(ElectionEvent::Lost(_)) => {} // campaigning again
            Err(_) => return Err(ErrorKind::TimedOut.into()),
        }
    }
}

fn client(nodes: &[String], owner: &str) -> redlock::Result<Client> {
    // quarantine(false) only because test masters are seconds old.
    Client::builder()
        .nodes(nodes)
        .quarantine(false)
        .owner(owner)
        .open()
}

fn run(nodes: &[String]) -> redlock::Result<bool> {
    let a = client(nodes, "scheduler-a")?;
    let b = client(nodes, "scheduler-b")?;
    let lease = Duration::from_secs(2);

    let (first, first_events) = a.elect("scheduler", lease)?;
    let term_a = elected(&first_events)?;
    println!("scheduler-a leads, term {term_a}");

    let (second, second_events) = b.elect("scheduler", lease)?;
    let view = a.leader("scheduler")?;
    println!(
        "leader as the masters see it: {}, term {}",
        view.owner, view.term
    );

    first.resign()?; // hand-over: b's campaign is woken by the release
    let term_b = elected(&second_events)?;
    println!("scheduler-b elected, term {term_b}");
    second.resign()?;

    // A watched lock outlives its TTL: the watch extends it until unlock().
    let lock = a.lock("report", Duration::from_secs(1))?;
    let lost = lock.watch()?;
    match lost.recv_timeout(Duration::from_millis(1500)) {
        // The work: longer than the TTL.
        Err(RecvTimeoutError::Timeout) => {
            println!("watched lock after 1500 ms of a 1000 ms TTL: held")
        }
        Ok(e) => {
            println!("watched lock lost: {e}");
            return Ok(false);
        }
        Err(RecvTimeoutError::Disconnected) => return Ok(false),
    }
    lock.unlock()?;
    Ok(term_b > term_a)
}

fn main() {
    let mut nodes: Vec<String> = std::env::args().skip(1).collect();
    if nodes.is_empty() {
        nodes.push("redis://127.0.0.1:6379".into());
    }
    match run(&nodes) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
