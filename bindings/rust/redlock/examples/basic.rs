//! A lock and its release, and what a second client is told meanwhile.
//!
//! ```sh
//! cargo run --example basic -- redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//! ```
//!
//! Run by tests/examples.rs.
use redlock::{Client, ErrorKind};
use std::time::Duration;

fn client(nodes: &[String], owner: &str) -> redlock::Result<Client> {
    // quarantine(false) only because test masters start seconds before this
    // runs: keep the restart quarantine on against real masters.
    Client::builder()
        .nodes(nodes)
        .quarantine(false)
        .owner(owner)
        .open()
}

fn run(nodes: &[String]) -> redlock::Result<bool> {
    let a = client(nodes, "worker-a")?;
    let b = client(nodes, "worker-b")?;
    let ttl = Duration::from_secs(10);

    let lock = match a.lock("orders:42", ttl) {
        Err(e) if e.kind() == ErrorKind::NoQuorum => {
            println!("too few masters answered: {e}"); // its text has the votes
            return Err(e);
        }
        other => other?,
    };
    println!(
        "worker-a locked {}, valid for {} ms",
        lock.resource(),
        lock.validity_ms()
    );
    println!("  votes: {}", a.last_votes());

    // One attempt while it is held: Locked (a quorum refused), not NoQuorum
    // (too few masters answered: an outage).
    match b.try_lock("orders:42", ttl) {
        Ok(other) => {
            println!("worker-b got it while held: wrong");
            other.unlock()?;
            return Ok(false);
        }
        Err(e) if e.kind() == ErrorKind::Locked => {
            println!("worker-b refused while held: {}", e.name())
        }
        Err(e) => return Err(e),
    }

    lock.unlock()?;
    // Released: worker-b waits up to 5 s for it (a release wakes it at once).
    let next = b.lock_wait("orders:42", ttl, Duration::from_secs(5))?;
    println!(
        "worker-b locked it after the release (owner {})",
        next.owner()
    );
    next.unlock()?;
    Ok(true)
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
