//! examples/basic.rs, fenced_write.rs and election.rs, run as a user runs
//! them (the binaries `cargo test` builds) against real redis-server
//! masters: each must exit 0 and print what it promises.
mod support;

use std::path::PathBuf;
use std::process::Command;
use support::Masters;

/// target/<profile>/examples/NAME: this test runs from target/<profile>/deps.
/// A plain `cargo test` builds the examples; `cargo test --test examples`
/// alone does not (`cargo build --examples` first).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

fn run(name: &str, masters: &Masters, wants: &[&str]) {
    let exe = example(name);
    assert!(
        exe.exists(),
        "{} not built: run `cargo test` with no target filter, or `cargo build --examples` first",
        exe.display()
    );
    let out = Command::new(&exe)
        .args(masters.uris())
        .output()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name}: {}\n{text}", out.status);
    for want in wants {
        assert!(text.contains(want), "{name}: no {want:?} in:\n{text}");
    }
}

#[test]
fn examples_run() {
    let masters = Masters::start(3);
    run(
        "basic",
        &masters,
        &[
            "worker-a locked orders:42, valid for ",
            "worker-b refused while held: REDLOCK_ELOCKED",
            "worker-b locked it after the release (owner worker-b)",
        ],
    );
    run(
        "fenced_write",
        &masters,
        &[
            "next-worker writes: accepted",
            "late write with token ",
            ": refused",
        ],
    );
    run(
        "election",
        &masters,
        &[
            "scheduler-a leads, term ",
            "leader as the masters see it: scheduler-a",
            "scheduler-b elected, term ",
            "watched lock after 1500 ms of a 1000 ms TTL: held",
        ],
    );
}
