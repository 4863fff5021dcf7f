//! Gives this crate's tests and examples an rpath to the libredlock that
//! redlock-sys found (DEP_REDLOCK_RPATH), so that they run without
//! LD_LIBRARY_PATH: Cargo applies a build script's `rustc-link-arg` only to
//! its own package's targets.  A program that depends on this crate sets its
//! own the same way, or links libredlock statically (REDLOCK_STATIC=1), or
//! uses a library installed where the loader looks (README.md "Linking").
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_REDLOCK_RPATH");
    if let Ok(dirs) = std::env::var("DEP_REDLOCK_RPATH") {
        for d in dirs.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
        }
    }
}
