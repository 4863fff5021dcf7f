//! Fake Redis masters for your own tests, in your process: no redis-server,
//! and no port unless asked for (libredlock's test kit,
//! `include/redlock_testing.h`).  Each fake answers what the library sends
//! as Redis does; its nodes are ordinary URIs for [`crate::Builder::nodes`],
//! and faults come on cue.
//!
//! ```no_run
//! use std::time::Duration;
//! use redlock::{testing::FakeMasters, Client, ErrorKind};
//! let fakes = FakeMasters::new(3)?;
//! let open = || Client::builder().nodes(fakes.nodes()).quarantine(false).open();
//! let (a, b) = (open()?, open()?);
//! let held = a.lock("job", Duration::from_secs(10))?;
//! assert_eq!(b.try_lock("job", Duration::from_secs(10)).unwrap_err().kind(), ErrorKind::Locked);
//! fakes.kill(0)?;
//! fakes.kill(1)?;
//! assert_eq!(b.lock("other", Duration::from_secs(10)).unwrap_err().kind(), ErrorKind::NoQuorum);
//! # drop(held);
//! # Ok::<(), redlock::Error>(())
//! ```
//!
//! Every method returns once the fault is in effect.  A restarted fake is up
//! 0 s: open clients with `.quarantine(false)`, or the restart quarantine
//! keeps it out for the max TTL, as it would a real one.  The fakes stop
//! when the [`FakeMasters`] is dropped.
use crate::{Error, Result};
use redlock_sys as sys;
use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::time::Duration;

/// How a fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// As Redis does.
    Normal,
    /// Every acquisition, extension and release succeeds, as if no other holder existed.
    Grant,
    /// Every acquisition and extension is refused, as if another held the key.
    Refuse,
}

/// Options of [`FakeMasters::with_options`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Listen on 127.0.0.1 ports instead of Unix sockets.
    pub tcp: bool,
    /// The fakes' clocks move only with [`FakeMasters::advance`].
    pub virtual_time: bool,
}

/// A set of fake masters (1..=16), stopped on drop.
pub struct FakeMasters {
    kit: *mut sys::redlock_testing_t,
    nodes: Vec<String>,
}

// SAFETY: every kit call is safe from any thread (it hands its work to the
// kit's own thread and waits for it).
unsafe impl Send for FakeMasters {}
unsafe impl Sync for FakeMasters {}

fn check(rc: c_int) -> Result<c_int> {
    if rc < 0 {
        Err(Error::from_code(rc))
    } else {
        Ok(rc)
    }
}

/// `d` in whole milliseconds, rounded up: a positive duration never becomes
/// 0, which would turn a delay off.
fn ms(d: Duration) -> u64 {
    let whole = d.as_millis() + u128::from(d.subsec_nanos() % 1_000_000 != 0);
    u64::try_from(whole).unwrap_or(u64::MAX)
}

fn key(k: &str) -> Result<CString> {
    CString::new(k).map_err(|_| Error::from_code(sys::REDLOCK_EINVAL))
}

fn index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX - 1) // refused by the kit as out of range
}

impl FakeMasters {
    /// `n` fake masters on Unix sockets, in real time.
    pub fn new(n: usize) -> Result<FakeMasters> {
        FakeMasters::with_options(n, Options::default())
    }

    /// `n` fake masters with `opts`.
    pub fn with_options(n: usize, opts: Options) -> Result<FakeMasters> {
        let n = u32::try_from(n).map_err(|_| Error::from_code(sys::REDLOCK_EINVAL))?;
        let mut flags = 0;
        if opts.tcp {
            flags |= sys::REDLOCK_TESTING_TCP;
        }
        if opts.virtual_time {
            flags |= sys::REDLOCK_TESTING_VIRTUAL_TIME;
        }
        let mut kit = std::ptr::null_mut();
        // SAFETY: out is written on success only.
        check(unsafe { sys::redlock_testing_start(n, flags, &mut kit) })?;
        let nodes = (0..n)
            .map(|i| {
                // SAFETY: live kit, i in range: a NUL-terminated string the kit owns.
                unsafe { CStr::from_ptr(sys::redlock_testing_uri(kit, i)) }
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        Ok(FakeMasters { kit, nodes })
    }

    /// The masters' URIs.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Master `i` dies: its connections close, its keys are lost; down until [`Self::restart`].
    pub fn kill(&self, i: usize) -> Result<()> {
        // SAFETY: live kit (here and below: the kit checks the index).
        check(unsafe { sys::redlock_testing_kill(self.kit, index(i)) }).map(drop)
    }

    /// Master `i` comes back empty, with a new run_id and uptime 0.
    pub fn restart(&self, i: usize) -> Result<()> {
        check(unsafe { sys::redlock_testing_restart(self.kit, index(i)) }).map(drop)
    }

    /// SIGSTOP: master `i` reads and answers nothing until [`Self::resume`].
    pub fn pause(&self, i: usize) -> Result<()> {
        check(unsafe { sys::redlock_testing_pause(self.kit, index(i)) }).map(drop)
    }

    /// SIGCONT: master `i` runs what waited, in order.
    pub fn resume(&self, i: usize) -> Result<()> {
        check(unsafe { sys::redlock_testing_resume(self.kit, index(i)) }).map(drop)
    }

    /// Every reply of master `i` comes `delay` late (zero: on time again).
    pub fn slow(&self, i: usize, delay: Duration) -> Result<()> {
        let d = u32::try_from(ms(delay)).unwrap_or(u32::MAX);
        check(unsafe { sys::redlock_testing_slow(self.kit, index(i), d) }).map(drop)
    }

    /// Master `i` loses `key` (the lock key is the key prefix + resource);
    /// true when it existed.
    pub fn drop_key(&self, i: usize, k: &str) -> Result<bool> {
        let k = key(k)?;
        check(unsafe { sys::redlock_testing_drop_key(self.kit, index(i), k.as_ptr()) })
            .map(|n| n == 1)
    }

    /// Master `i`'s clock jumps forward by `by`: its keys expire that much sooner.
    pub fn clock_jump(&self, i: usize, by: Duration) -> Result<()> {
        check(unsafe { sys::redlock_testing_clock_jump(self.kit, index(i), ms(by)) }).map(drop)
    }

    /// Master `i` is replaced by its replica, `lag` behind: the keys written
    /// in the last `lag` are missing; clients' failover quarantine applies.
    pub fn failover(&self, i: usize, lag: Duration) -> Result<()> {
        check(unsafe { sys::redlock_testing_failover(self.kit, index(i), ms(lag)) }).map(drop)
    }

    /// Sets master `i`'s mode (`None`: every master's).
    pub fn set_mode(&self, i: Option<usize>, mode: Mode) -> Result<()> {
        let m = match mode {
            Mode::Normal => sys::REDLOCK_TESTING_NORMAL,
            Mode::Grant => sys::REDLOCK_TESTING_GRANT,
            Mode::Refuse => sys::REDLOCK_TESTING_REFUSE,
        };
        let i = i.map_or(sys::REDLOCK_TESTING_ALL, index);
        check(unsafe { sys::redlock_testing_set_mode(self.kit, i, m) }).map(drop)
    }

    /// Every fake's clock moves forward by `by`.
    pub fn advance(&self, by: Duration) -> Result<()> {
        check(unsafe { sys::redlock_testing_advance(self.kit, ms(by)) }).map(drop)
    }

    /// Whether master `i` holds `key`.
    pub fn has_key(&self, i: usize, k: &str) -> Result<bool> {
        let k = key(k)?;
        check(unsafe { sys::redlock_testing_has_key(self.kit, index(i), k.as_ptr()) })
            .map(|n| n == 1)
    }

    /// How many masters hold `key`.
    pub fn key_count(&self, k: &str) -> Result<usize> {
        let k = key(k)?;
        check(unsafe { sys::redlock_testing_key_count(self.kit, k.as_ptr()) }).map(|n| n as usize)
    }

    /// Commands master `i` ran since it (re)started.
    pub fn commands(&self, i: usize) -> Result<u64> {
        let n = unsafe { sys::redlock_testing_commands(self.kit, index(i)) };
        if n < 0 {
            Err(Error::from_code(n as i32))
        } else {
            Ok(n as u64)
        }
    }
}

impl Drop for FakeMasters {
    fn drop(&mut self) {
        // SAFETY: live kit, stopped once.
        unsafe { sys::redlock_testing_stop(self.kit) }
    }
}

#[cfg(test)]
mod tests {
    use super::ms;
    use std::time::Duration;

    #[test]
    fn durations_round_up_to_whole_milliseconds() {
        assert_eq!(ms(Duration::ZERO), 0);
        assert_eq!(ms(Duration::from_micros(500)), 1);
        assert_eq!(ms(Duration::from_millis(1)), 1);
        assert_eq!(ms(Duration::from_micros(1500)), 2);
        assert_eq!(ms(Duration::MAX), u64::MAX);
    }
}
