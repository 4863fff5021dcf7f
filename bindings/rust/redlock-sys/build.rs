//! Links libredlock.  The directory holding libredlock.so comes from
//! REDLOCK_LIB_DIR; without it, the in-tree build directory (../../../build,
//! i.e. <repo>/build) is used when it has the library, else the linker's
//! default search path (an installed library: /usr/local/lib, /usr/lib).
//! The directory is also passed to dependents as DEP_REDLOCK_LIB_DIR, so that
//! they can set an rpath for their own tests.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=REDLOCK_LIB_DIR");
    let dir = match env::var_os("REDLOCK_LIB_DIR") {
        Some(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => {
            let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
            let tree = manifest.join("../../../build");
            if tree.join("libredlock.so").exists() {
                Some(tree.canonicalize().unwrap_or(tree))
            } else {
                None
            }
        }
    };
    if let Some(dir) = dir {
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("libredlock.so").display()
        );
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:lib_dir={}", dir.display());
        // For this crate's own tests (not passed on to dependents).
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=redlock");
}
