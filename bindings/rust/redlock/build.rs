//! Gives this crate's tests and examples an rpath to the libredlock that
//! redlock-sys linked (DEP_REDLOCK_LIB_DIR), so they run without
//! LD_LIBRARY_PATH.  Programs that depend on this crate use the installed
//! library (cmake --install, ldconfig) or set their own rpath.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_REDLOCK_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_REDLOCK_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
