//! The masters of the integration tests: each test starts its own redis-server
//! processes on free loopback ports and stops them (by PID) when the guard
//! drops; `cmd` speaks one RESP command to a master; `block_on` runs a future
//! on the calling thread (no executor crate: the tests build offline).
#![allow(dead_code)]
use redlock::Client;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};
extern "C" {
    pub fn kill(pid: i32, sig: i32) -> i32;
}
pub const SIGSTOP: i32 = 19;
pub const SIGCONT: i32 = 18;

pub struct Masters {
    pub children: Vec<Child>,
    pub ports: Vec<u16>,
    pub dir: std::path::PathBuf,
}

impl Masters {
    pub fn start(n: usize) -> Masters {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "redlock-rust-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut m = Masters {
            children: vec![],
            ports: vec![],
            dir,
        };
        for _ in 0..n {
            m.start_one();
        }
        m
    }

    /// Starts one redis-server on a fresh free port and waits until the
    /// server answering there is ours (INFO's process_id is our child's PID).
    /// A free port can be taken by someone else (a parallel test) before
    /// redis-server binds it: the child then exits, and we try another port.
    pub fn start_one(&mut self) {
        for _attempt in 0..5 {
            let port = loop {
                let p = TcpListener::bind("127.0.0.1:0")
                    .unwrap()
                    .local_addr()
                    .unwrap()
                    .port();
                if !self.ports.contains(&p) {
                    break p;
                }
            };
            let mut child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--dir")
                .arg(&self.dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server");
            let pid_line = format!("process_id:{}", child.id());
            let deadline = Instant::now() + Duration::from_secs(10);
            let ready = loop {
                if cmd(port, &["INFO", "server"]).is_ok_and(|s| s.lines().any(|l| l == pid_line)) {
                    break true;
                }
                if child.try_wait().ok().flatten().is_some() || Instant::now() >= deadline {
                    break false;
                }
                thread::sleep(Duration::from_millis(20));
            };
            if ready {
                self.children.push(child);
                self.ports.push(port);
                return;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("could not start redis-server on a free port (5 attempts)");
    }

    pub fn uris(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect()
    }

    pub fn all(&self, args: &[&str]) -> Vec<String> {
        self.ports.iter().map(|&p| cmd(p, args).unwrap()).collect()
    }

    pub fn signal(&self, i: usize, sig: i32) {
        // SAFETY: kill(2) on the PID of a child we started and have not reaped.
        unsafe { kill(self.children[i].id() as i32, sig) };
    }

    pub fn client(&self) -> redlock::Builder {
        Client::builder()
            .nodes(self.uris())
            .quarantine(false)
            .retry(2, Duration::from_millis(20), Duration::from_millis(20))
    }
}

impl Drop for Masters {
    fn drop(&mut self) {
        for c in &mut self.children {
            // SAFETY: as in signal().
            unsafe { kill(c.id() as i32, SIGCONT) };
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One command in RESP; the reply as text ("(nil)" for a nil bulk string).
pub fn cmd(port: u16, args: &[&str]) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out += &format!("${}\r\n{}\r\n", a.len(), a);
    }
    s.write_all(out.as_bytes()).map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?;
    let line = line.trim_end().to_string();
    match line.as_bytes().first() {
        Some(b'+') | Some(b':') => Ok(line[1..].to_string()),
        Some(b'-') => Err(line[1..].to_string()),
        Some(b'$') => {
            let n: i64 = line[1..].parse().unwrap();
            if n < 0 {
                return Ok("(nil)".into());
            }
            let mut buf = vec![0u8; n as usize + 2];
            r.read_exact(&mut buf).map_err(|e| e.to_string())?;
            Ok(String::from_utf8_lossy(&buf[..n as usize]).into_owned())
        }
        _ => Ok(line),
    }
}

/// Wakes the thread that blocks in `block_on`.
struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `fut` on this thread until it is ready.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

/// Polls `fut` once (it starts its call when created; this registers a waker).
pub fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    std::pin::Pin::new(fut).poll(&mut Context::from_waker(&waker))
}

/// Polls `cond` until it holds or `within` has passed; whether it held.
pub fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}
