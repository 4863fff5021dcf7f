//! Finds libredlock and tells rustc how to link it, with the standard library
//! only (no crates: the `pkg-config` program is run directly).  In order:
//!
//! 1. `REDLOCK_LIB_DIR`: the directory holding libredlock.so (an override
//!    for a library no `.pc` describes);
//! 2. `pkg-config redlock` (the program named by `PKG_CONFIG`, default
//!    `pkg-config`), which honours `PKG_CONFIG_PATH`: an installed library
//!    (`cmake --install`, the libredlock-dev package), or a build tree, whose
//!    `redlock-uninstalled.pc` pkg-config prefers when PKG_CONFIG_PATH names
//!    the build directory;
//! 3. the in-tree build directory (<repo>/build) when it has the library;
//! 4. otherwise plain `-lredlock` (the linker's default search path).
//!
//! The `static` feature (or `REDLOCK_STATIC=1`) links libredlock.a instead
//! (its own dependencies, hiredis and libuv, stay shared): a program then
//! loads no libredlock at run time, so it needs no rpath for it.  rustc
//! looks for a static library only in the directories it is given, and
//! pkg-config leaves out `-L` for a system library directory (the
//! libredlock-dev package's /usr/lib/<multiarch>): the directory holding
//! libredlock.a is then searched for (pkg-config's `libdir`, then the usual
//! system directories) and added as a search path, not as an rpath.
//!
//! Every library directory found is also an rpath of this crate's own tests,
//! and is passed to the crates that depend on this one as
//! `DEP_REDLOCK_LIB_DIR` (the first) and `DEP_REDLOCK_RPATH` (all, `:`
//! separated): Cargo applies `rustc-link-arg` only to the targets of the
//! package whose build script emits it, so a dependent sets its own rpath
//! from these (the `redlock` crate does, for its tests and examples).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to link: directories to search, libraries by name.
struct Link {
    dirs: Vec<PathBuf>,
    libs: Vec<String>,
    how: String,
}

fn main() {
    for v in [
        "REDLOCK_LIB_DIR",
        "REDLOCK_STATIC",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
        "PKG_CONFIG_SYSTEM_LIBRARY_PATH",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let statik = env::var_os("CARGO_FEATURE_STATIC").is_some()
        || env::var("REDLOCK_STATIC").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut link = from_env()
        .or_else(|| from_pkg_config(statik))
        .or_else(from_tree)
        .unwrap_or_else(|| {
            println!(
                "cargo:warning=libredlock: no pkg-config file (set PKG_CONFIG_PATH to the \
                 directory of redlock.pc or of a build tree's redlock-uninstalled.pc) and no \
                 REDLOCK_LIB_DIR; linking -lredlock from the default search path"
            );
            Link {
                dirs: vec![],
                libs: vec!["redlock".into()],
                how: "default search path".into(),
            }
        });
    if statik && link.how != "pkg-config" {
        add_static_deps(&mut link);
    }
    let mut search_only = Vec::new();
    if statik && !link.dirs.iter().any(|d| d.join("libredlock.a").exists()) {
        match static_lib_dir() {
            Some(d) => search_only.push(d),
            None => println!(
                "cargo:warning=libredlock: the static feature found no libredlock.a (pkg-config's \
                 libdir, /usr/local/lib, /usr/lib/<multiarch>, /usr/lib64, /usr/lib); install \
                 the development package or set REDLOCK_LIB_DIR"
            ),
        }
    }
    for d in &search_only {
        println!("cargo:rustc-link-search=native={}", d.display());
        println!(
            "cargo:rerun-if-changed={}",
            d.join("libredlock.a").display()
        );
    }
    for d in &link.dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
        for f in ["libredlock.so", "libredlock.a"] {
            if d.join(f).exists() {
                println!("cargo:rerun-if-changed={}", d.join(f).display());
            }
        }
        // For this crate's own tests (Cargo does not pass it on to dependents).
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", d.display());
    }
    for l in &link.libs {
        if l == "redlock" && statik {
            println!("cargo:rustc-link-lib=static=redlock");
        } else {
            println!("cargo:rustc-link-lib={l}");
        }
    }
    if let Some(d) = link.dirs.first() {
        println!("cargo:lib_dir={}", d.display());
    }
    let rpath: Vec<String> = link.dirs.iter().map(|d| d.display().to_string()).collect();
    println!("cargo:rpath={}", rpath.join(":"));
    println!("cargo:found={}", link.how);
}

/// The directory of libredlock.a when no search path names it: pkg-config's
/// `libdir`, then the system library directories, which the linker searches
/// by itself but rustc does not.
fn static_lib_dir() -> Option<PathBuf> {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let mut dirs = Vec::new();
    if let Ok(out) = Command::new(&prog)
        .args(["--variable=libdir", "redlock"])
        .output()
    {
        let d = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !d.is_empty() {
            dirs.push(PathBuf::from(d));
        }
    }
    dirs.push(PathBuf::from("/usr/local/lib"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let envv = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && !arch.is_empty() {
        // Debian's multiarch triplets for the common targets.
        let triplet = match (arch.as_str(), envv.as_str()) {
            ("x86", e) => format!("i386-linux-{e}"),
            ("arm", e) => format!("arm-linux-{e}eabihf"),
            ("powerpc64", e) => format!("powerpc64le-linux-{e}"),
            (a, e) => format!("{a}-linux-{e}"),
        };
        dirs.push(PathBuf::from("/usr/lib").join(triplet));
    }
    dirs.push(PathBuf::from("/usr/lib64"));
    dirs.push(PathBuf::from("/usr/lib"));
    dirs.into_iter().find(|d| d.join("libredlock.a").exists())
}

fn from_env() -> Option<Link> {
    let dir = env::var_os("REDLOCK_LIB_DIR").filter(|d| !d.is_empty())?;
    let dir = PathBuf::from(dir);
    Some(Link {
        dirs: vec![dir.canonicalize().unwrap_or(dir)],
        libs: vec!["redlock".into()],
        how: "REDLOCK_LIB_DIR".into(),
    })
}

/// libredlock.a names none of the libraries it needs, and only pkg-config
/// (`--static`) lists them: the others get the usual set.
fn add_static_deps(link: &mut Link) {
    let mut deps = vec!["hiredis", "uv", "pthread"];
    if link.dirs.iter().any(|d| tls_in(d)) {
        deps.extend(["hiredis_ssl", "ssl", "crypto"]);
    }
    link.libs.extend(deps.into_iter().map(String::from));
}

/// Whether a build tree's library was configured with TLS (its redlock.pc
/// requires hiredis_ssl).
fn tls_in(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("redlock.pc")).is_ok_and(|s| s.contains("hiredis_ssl"))
}

fn from_pkg_config(statik: bool) -> Option<Link> {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let mut cmd = Command::new(&prog);
    cmd.arg("--libs");
    if statik {
        cmd.arg("--static");
    }
    let out = cmd.arg("redlock").output().ok()?;
    if !out.status.success() {
        println!(
            "cargo:warning=libredlock: `{prog} --libs redlock` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut dirs, mut libs) = (Vec::new(), Vec::new());
    for tok in text.split_whitespace() {
        if let Some(d) = tok.strip_prefix("-L") {
            let d = PathBuf::from(d);
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        } else if let Some(l) = tok.strip_prefix("-l") {
            if !libs.iter().any(|x| x == l) {
                libs.push(l.to_string());
            }
        }
    }
    if !libs.iter().any(|l| l == "redlock") {
        return None;
    }
    if let Ok(pc) = Command::new(&prog).args(["--path", "redlock"]).output() {
        let p = String::from_utf8_lossy(&pc.stdout).trim().to_string();
        if !p.is_empty() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    Some(Link {
        dirs,
        libs,
        how: "pkg-config".into(),
    })
}

/// <repo>/build, when this crate is built inside the repository and the
/// library was built there.
fn from_tree() -> Option<Link> {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
    let tree = manifest.join("../../../build");
    if !tree.join("libredlock.so").exists() {
        return None;
    }
    Some(Link {
        dirs: vec![tree.canonicalize().unwrap_or(tree)],
        libs: vec!["redlock".into()],
        how: "in-tree build".into(),
    })
}
