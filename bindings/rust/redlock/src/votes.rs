//! A round's votes, master by master: [`Vote`], read from the one-line
//! summary the library writes (`redlock_last_votes`:
//! `OUTCOME: MASTER=VERDICT[ (DETAIL)] ...`), for [`crate::Error::verdicts`].

/// One master's verdict in the round a failed call decided.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Vote {
    /// The master (voter) as the library names it: `host:port`, or a
    /// socket path.
    pub master: String,
    /// Its verdict: `OK`, `refused` (held elsewhere), `down`, `busy`,
    /// `timeout`, `disconnected`, `error`, `quarantined` (restart or
    /// failover quarantine), `unacked` (a replica acknowledgement fell
    /// short), `duplicate`, `bad-reply`, `unsupported` (the call needs a Lua
    /// script and the master runs none) or `pending` (no answer when the
    /// round was decided).
    pub verdict: String,
    /// What the library adds in parentheses: the time a quarantine has
    /// left, why an ack fell short, an error's text.
    pub detail: Option<String>,
}

impl Vote {
    /// True for a master whose vote did not count because it was in its
    /// restart (or failover) quarantine.
    pub fn is_quarantined(&self) -> bool {
        self.verdict == "quarantined"
    }
}

/// The votes of a summary line; empty when it has none (or is not one).
pub(crate) fn parse(line: &str) -> Vec<Vote> {
    let mut out = Vec::new();
    // The outcome ("won", "lost (no quorum)", ...) holds no ':'.
    let mut rest = match line.split_once(':') {
        Some((_, r)) => r,
        None => return out,
    };
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return out;
        }
        let (master, after) = match rest.split_once('=') {
            Some(p) => p,
            None => return out,
        };
        let end = after.find(' ').unwrap_or(after.len());
        let verdict = &after[..end];
        rest = &after[end..];
        let mut detail = None;
        if let Some(inner) = rest.strip_prefix(" (") {
            // Up to the matching ')': a detail may hold parentheses itself.
            let mut depth = 1;
            let close = inner.char_indices().find_map(|(i, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i)
            });
            let close = close.unwrap_or(inner.len());
            detail = Some(inner[..close].to_owned());
            rest = inner.get(close + 1..).unwrap_or("");
        }
        out.push(Vote {
            master: master.to_owned(),
            verdict: verdict.to_owned(),
            detail,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_verdicts_and_details() {
        let v = parse(
            "lost (no quorum): 127.0.0.1:7001=quarantined (restart quarantine: 412 ms left) \
             127.0.0.1:7002=OK 127.0.0.1:7003=unacked (wait=1: 0 of 1 (NOREPLICAS))",
        );
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(v[0].master, "127.0.0.1:7001");
        assert!(v[0].is_quarantined());
        assert_eq!(
            v[0].detail.as_deref(),
            Some("restart quarantine: 412 ms left")
        );
        assert_eq!(
            (v[1].verdict.as_str(), v[1].detail.as_deref()),
            ("OK", None)
        );
        assert_eq!(v[2].verdict, "unacked");
        assert_eq!(v[2].detail.as_deref(), Some("wait=1: 0 of 1 (NOREPLICAS)"));
        assert!(parse("none: a:1=- b:2=-").iter().all(|v| v.verdict == "-"));
        assert!(parse("").is_empty());
    }
}
