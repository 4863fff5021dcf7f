//! The Rust side of bindings/interop/run.sh:
//!     interop_contender try  RESOURCE TTL_MS HOLD_MS   (HOLD_MS "stdin": until a line or EOF)
//!     interop_contender wait RESOURCE TTL_MS HOLD_MS WAIT_MS
//! Masters from REDLOCK_NODES (comma-separated); fencing on, quarantine off.
//! Prints "ACQUIRED <fence> <unix ms>", "RELEASING <unix ms>"; or "LOCKED"
//! (exit 75); or "ERROR <name>" (exit 1).
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn ms(s: &str) -> Duration {
    Duration::from_millis(s.parse().expect("a number of milliseconds"))
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: interop_contender try|wait RESOURCE TTL_MS HOLD_MS [WAIT_MS]");
        std::process::exit(2);
    }
    let nodes: Vec<String> = std::env::var("REDLOCK_NODES")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let client = match redlock::Client::builder()
        .nodes(nodes)
        .fencing(true)
        .quarantine(false)
        .open()
    {
        Ok(c) => c,
        Err(e) => {
            println!("ERROR {}", e.name());
            std::process::exit(1);
        }
    };
    let (resource, ttl) = (&args[2], ms(&args[3]));
    let res = if args[1] == "wait" {
        client.lock_wait(resource, ttl, ms(&args[5]))
    } else {
        client.try_lock(resource, ttl)
    };
    let code = match res {
        Ok(lock) => {
            println!("ACQUIRED {} {}", lock.fence(), now_ms());
            if args[4] == "stdin" {
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line); // hold until a line or EOF
            } else {
                std::thread::sleep(ms(&args[4]));
            }
            println!("RELEASING {}", now_ms());
            let _ = lock.unlock();
            0
        }
        Err(e)
            if matches!(
                e.kind(),
                redlock::ErrorKind::Locked | redlock::ErrorKind::TimedOut
            ) =>
        {
            println!("LOCKED");
            75
        }
        Err(e) => {
            println!("ERROR {}", e.name());
            1
        }
    };
    drop(client);
    std::process::exit(code);
}
