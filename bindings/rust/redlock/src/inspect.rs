//! Who holds a resource, and taking a lock back: [`Client::inspect`]
//! (`redlock_inspect`, its JSON text read into an [`Inspection`]) and
//! [`Client::revoke`] (`redlock_revoke`).  Both block the calling thread for
//! one round to every master, as [`Client::try_lock`] does.
use crate::json::{self, Value};
use crate::{call_result, cstring, sys, Client, ErrorKind, Result};
use std::os::raw::{c_char, c_int};

/// What kind of resource [`Client::inspect`] reads; the name is taken as
/// that kind's calls take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A lock's resource ([`Client::lock`]).
    Lock,
    /// A counting semaphore's name ([`Client::semaphore`]).
    Semaphore,
    /// A read-write lock's name ([`Client::rwlock_read`], [`Client::rwlock_write`]).
    RwLock,
    /// An election's name ([`Client::elect`]).
    Election,
}

impl Kind {
    fn code(self) -> c_int {
        match self {
            Kind::Lock => sys::REDLOCK_INSPECT_LOCK,
            Kind::Semaphore => sys::REDLOCK_INSPECT_SEMAPHORE,
            Kind::RwLock => sys::REDLOCK_INSPECT_RWLOCK,
            Kind::Election => sys::REDLOCK_INSPECT_ELECTION,
        }
    }
}

/// The masters' view of one resource ([`Client::inspect`]): the fields of
/// the library's JSON object (docs/api.md, "Inspect and revoke"), a JSON
/// `null` read as `None`.  [`Inspection::raw`] keeps the text itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    pub name: String,
    /// `"lock"`, `"semaphore"`, `"rwlock"` or `"election"`.
    pub kind: String,
    /// A quorum of masters hold the same value (a semaphore: some permit; a
    /// read-write lock: the writer or some reader).  A resource held on a
    /// minority only is not held.
    pub held: bool,
    /// At least a quorum answered and every master that answered shows the
    /// same holds.
    pub agreed: bool,
    /// The one hold a quorum agrees on.
    pub value: Option<String>,
    /// Its owner label (`None` also for a value without one, e.g. another
    /// client's).
    pub owner: Option<String>,
    /// The remaining TTL range of the agreed holds, over the masters that
    /// hold them, in ms.
    pub ttl_ms_min: Option<i64>,
    pub ttl_ms_max: Option<i64>,
    /// The largest fence counter a master reports (an election's term): at
    /// least the holder's token.
    pub fence: Option<u64>,
    /// The quorum, and how many holds a quorum agrees on.
    pub quorum: u32,
    pub count: u32,
    pub holders: Vec<Holder>,
    pub masters: Vec<MasterView>,
    /// The library's JSON text.
    pub raw: String,
}

/// One hold a quorum agrees on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    pub value: Option<String>,
    pub owner: Option<String>,
    pub ttl_ms_min: Option<i64>,
    pub ttl_ms_max: Option<i64>,
    /// A semaphore's permit slot.
    pub slot: Option<u32>,
    /// A read-write lock's hold: `"read"` or `"write"`.
    pub mode: Option<String>,
}

/// One master's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MasterView {
    pub addr: String,
    /// `"holds"` (only agreed holds), `"free"`, `"other"` (something no
    /// quorum agrees on), or why it gave no answer (`"down"`, `"timeout"`,
    /// `"unsupported"` for a master without Lua, `"error"`, ...).
    pub state: String,
    /// Its one hold (`None` when it has none or several).
    pub value: Option<String>,
    pub owner: Option<String>,
    pub ttl_ms: Option<i64>,
    /// How many holds it has (`None` when it gave no answer).
    pub holds: Option<u32>,
}

impl Inspection {
    fn from_json(raw: String) -> Option<Inspection> {
        let v = json::parse(&raw)?;
        let u32_of = |v: &Value, k: &str| v.u64(k).and_then(|n| u32::try_from(n).ok());
        let holders = v
            .array("holders")
            .iter()
            .map(|h| Holder {
                value: h.str("value"),
                owner: h.str("owner"),
                ttl_ms_min: h.i64("ttl_ms_min"),
                ttl_ms_max: h.i64("ttl_ms_max"),
                slot: u32_of(h, "slot"),
                mode: h.str("mode"),
            })
            .collect();
        let masters = v
            .array("masters")
            .iter()
            .map(|m| MasterView {
                addr: m.str("addr").unwrap_or_default(),
                state: m.str("state").unwrap_or_default(),
                value: m.str("value"),
                owner: m.str("owner"),
                ttl_ms: m.i64("ttl_ms"),
                holds: u32_of(m, "holds"),
            })
            .collect();
        Some(Inspection {
            name: v.str("name")?,
            kind: v.str("kind")?,
            held: v.bool("held"),
            agreed: v.bool("agreed"),
            value: v.str("value"),
            owner: v.str("owner"),
            ttl_ms_min: v.i64("ttl_ms_min"),
            ttl_ms_max: v.i64("ttl_ms_max"),
            fence: v.u64("fence"),
            quorum: u32_of(&v, "quorum").unwrap_or(0),
            count: u32_of(&v, "count").unwrap_or(0),
            holders,
            masters,
            raw,
        })
    }
}

impl Client {
    /// Reads what every master stores for `name` and returns the quorum's
    /// view: held or not, the holder's owner label, the remaining TTL
    /// range, the fence counter, and each master's answer.  Nothing is
    /// written.  Blocks for one round (every master's answer or its
    /// request timeout).
    pub fn inspect(&self, name: &str, kind: Kind) -> Result<Inspection> {
        let n = cstring(name)?;
        // Each call is a round of its own: a text that outgrew the buffer
        // is read again into one of the size it said (plus room, as the
        // masters' view may change in between).
        let mut size = 4096usize;
        loop {
            let mut buf = vec![0u8; size];
            // SAFETY: live client, NUL-terminated name, buf writable for size bytes.
            let rc = unsafe {
                sys::redlock_inspect(
                    self.raw(),
                    n.as_ptr(),
                    kind.code(),
                    buf.as_mut_ptr() as *mut c_char,
                    size,
                )
            };
            call_result(self.raw(), rc.min(0), "inspect", name, false)?;
            let len = rc as usize;
            if len < size {
                buf.truncate(len);
                let text = String::from_utf8_lossy(&buf).into_owned();
                // The library writes well-formed JSON: anything else is a
                // library fault, reported as an I/O error.
                return Inspection::from_json(text).ok_or_else(|| ErrorKind::Io.into());
            }
            size = len + 1024;
        }
    }

    /// An administrator's revoke of a lock (or an election's lease),
    /// whoever holds it: the hold is ended on a quorum and, with fencing on
    /// the key, the masters' fence counter is raised above every token
    /// granted.  Returns that counter (0 when no master has one for the
    /// key): tell the resources the holder writes, and a store that checks
    /// tokens refuses the old holder at once.  Without fencing the key keeps
    /// the rest of its TTL under a value of the revoker's, so nobody is
    /// granted it before the old lease would have ended.  Either way the
    /// holder's next extension (its watch's too) fails: its watch reports
    /// [`ErrorKind::Lost`].  [`ErrorKind::NoQuorum`] when fewer than a
    /// quorum did it (some may have), [`ErrorKind::NotSupported`] when too
    /// many masters run no Lua.
    pub fn revoke(&self, resource: &str) -> Result<u64> {
        let r = cstring(resource)?;
        let mut fence = 0u64;
        // SAFETY: live client, NUL-terminated resource, valid out-pointer.
        let rc = unsafe { sys::redlock_revoke(self.raw(), r.as_ptr(), &mut fence) };
        call_result(self.raw(), rc, "revoke", resource, true)?;
        Ok(fence)
    }
}
