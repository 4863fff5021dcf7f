//! Why fencing tokens matter: a holder that stalled past its lock's expiry
//! writes late, and the store refuses it because a newer holder's token is
//! larger.  The lock alone cannot stop that write; the store's check can.
//!
//! ```sh
//! cargo run --example fenced_write -- redis://127.0.0.1:7001 redis://127.0.0.1:7002 ...
//! ```
//!
//! Run by tests/examples.rs.
use redlock::Client;
use std::sync::Mutex;
use std::time::Duration;

/// The protected resource: it remembers the largest token it accepted and
/// refuses a write carrying a smaller one (a row's version column, a
/// conditional write, ...).
#[derive(Default)]
struct FencedStore {
    state: Mutex<(u64, String)>, // (highest token, value)
}

impl FencedStore {
    fn write(&self, token: u64, value: &str) -> bool {
        let mut s = self.state.lock().unwrap();
        if token < s.0 {
            return false;
        }
        *s = (token, value.to_owned());
        true
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "accepted"
    } else {
        "refused"
    }
}

fn client(nodes: &[String], owner: &str) -> redlock::Result<Client> {
    // fencing: every grant gets a token larger than every earlier one.
    // quarantine(false) only because test masters are seconds old.
    Client::builder()
        .nodes(nodes)
        .fencing(true)
        .quarantine(false)
        .owner(owner)
        .open()
}

fn run(nodes: &[String]) -> redlock::Result<bool> {
    let slow = client(nodes, "slow-worker")?;
    let next = client(nodes, "next-worker")?;
    let store = FencedStore::default();

    // A short lock that its holder neither extends nor watches: it stalls
    // (a GC pause, a swapped-out process) and the lock expires under it.
    let stale = slow.lock("ledger", Duration::from_millis(300))?;
    println!("slow-worker holds ledger with token {}", stale.fence());

    // The next worker waits for the expiry and gets a larger token.
    let fresh = next.lock_wait("ledger", Duration::from_secs(10), Duration::from_secs(5))?;
    println!("next-worker holds ledger with token {}", fresh.fence());
    let wrote = store.write(fresh.fence(), "from next-worker");
    println!("next-worker writes: {}", verdict(wrote));

    // The stalled holder wakes up and writes as if it still held the lock.
    let late = store.write(stale.fence(), "from slow-worker");
    println!(
        "slow-worker's late write with token {}: {}",
        stale.fence(),
        verdict(late)
    );
    let ok = wrote && !late && fresh.fence() > stale.fence();
    fresh.unlock()?;
    let _ = stale.unlock(); // long expired: nothing of ours is left (Lost)
    Ok(ok)
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
