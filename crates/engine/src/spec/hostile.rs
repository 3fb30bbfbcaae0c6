//! The clients beside the load that are no benchmark: keep-alive connections held idle, and slow
//! clients (slowloris, R.U.D.Y., slow read). What the spec says of them, its defaults, and the
//! checks, each refusal one line.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{seconds, LoadSpec};
use crate::Error;

/// Keep-alive connections opened before the load, each after one request answered (so that the
/// server has taken it in), then held idle while the load runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IdleSpec {
    /// How many (0: none). They need keep-alive.
    pub connections: u32,
    /// Seconds between the requests that keep each one alive, counted apart from the load's;
    /// null: never asked again, so that a server that closes idle connections is seen doing it.
    pub ping: Option<f64>,
}

/// What a slow client does to hold its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlowMode {
    /// Slowloris: the request line and its headers, then one more header fragment every
    /// interval, never the blank line that ends the head. Over HTTP/2: HEADERS without
    /// END_HEADERS, then a CONTINUATION frame every interval.
    #[default]
    Headers,
    /// R.U.D.Y.: a POST whose head announces `content_length` bytes, its body trickled a chunk
    /// every interval (over HTTP/2 a DATA frame each).
    Body,
    /// Slow read: a GET of a large answer (`path`: at least some MB) on a socket whose receive
    /// buffer is `window_bytes`, read a chunk every interval. Over HTTP/2 the stream's window is
    /// `window_bytes` (SETTINGS_INITIAL_WINDOW_SIZE), opened by a chunk every interval.
    Read,
}

impl SlowMode {
    pub fn name(self) -> &'static str {
        match self {
            SlowMode::Headers => "headers",
            SlowMode::Body => "body",
            SlowMode::Read => "read",
        }
    }
}

/// Slow clients, each on a connection of its own, opened with their trickle started before the
/// load's warm-up; one the server closes is opened again until the run ends. A run with them is
/// never ended early by the engine for a server that stopped answering: starving the load is
/// what they measure. Fields left null take the mode's defaults (`SlowSettings::of`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SlowSpec {
    /// How many connections (0: none).
    pub clients: u32,
    pub mode: SlowMode,
    /// Seconds between chunks sent (headers, body) or read (read); default 10 for headers and
    /// body (slowhttptest's), 1 for read.
    pub interval: Option<f64>,
    /// Bytes per chunk; default 24 for headers, 16 for body, 32 for read.
    pub chunk_bytes: Option<u32>,
    /// read: the socket's receive buffer (SO_RCVBUF, set before connecting, so the window the
    /// server sees is small from the start); default 4096 (Linux doubles it, and takes no less
    /// than 2304).
    pub window_bytes: Option<u32>,
    /// body: the Content-Length the POST announces; default 4096 (slowhttptest's).
    pub content_length: Option<u64>,
    /// Seconds a connection is held at most before the client closes it and opens another;
    /// default 600.
    pub hold: Option<f64>,
    /// The path asked for; default the first URL's. Slow read needs a large answer.
    pub path: Option<String>,
}

/// Idle connections, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct IdleSettings {
    pub connections: u32,
    pub ping: Option<Duration>,
}

/// Slow clients, checked, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowSettings {
    pub clients: u32,
    pub mode: SlowMode,
    pub interval: Duration,
    pub chunk_bytes: usize,
    pub window_bytes: u32,
    pub content_length: u64,
    pub hold: Duration,
    pub path: String,
}

impl SlowSettings {
    /// `spec` with the mode's defaults filled in; `first_path` is the run's first URL's path.
    fn of(spec: &SlowSpec, first_path: &str) -> Result<SlowSettings, Error> {
        let (interval, chunk) = match spec.mode {
            SlowMode::Headers => (10.0, 24),
            SlowMode::Body => (10.0, 16),
            SlowMode::Read => (1.0, 32),
        };
        let bytes = |field: &'static str, v: Option<u32>, default: u32| match v.unwrap_or(default) {
            0 => Err(Error::spec(
                field,
                format!("{field} must be at least 1 byte"),
            )),
            n => Ok(n),
        };
        let path = spec.path.clone().unwrap_or_else(|| first_path.to_string());
        if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(Error::spec(
                "slow.path",
                format!("slow.path {path:?} is no path; give one such as /big.bin"),
            ));
        }
        Ok(SlowSettings {
            clients: spec.clients,
            mode: spec.mode,
            interval: seconds("slow.interval", spec.interval.unwrap_or(interval), false)?,
            chunk_bytes: bytes("slow.chunk_bytes", spec.chunk_bytes, chunk)? as usize,
            window_bytes: bytes("slow.window_bytes", spec.window_bytes, 4096)?,
            content_length: match spec.content_length.unwrap_or(4096) {
                0 => {
                    return Err(Error::spec(
                        "slow.content_length",
                        "slow.content_length must be at least 1 byte".into(),
                    ))
                }
                n => n,
            },
            hold: seconds("slow.hold", spec.hold.unwrap_or(600.0), false)?,
            path,
        })
    }
}

impl LoadSpec {
    /// The idle connections and slow clients, checked, or None where the spec asks for none.
    pub(super) fn check_hostile(
        &self,
        first_path: &str,
    ) -> Result<(Option<IdleSettings>, Option<SlowSettings>), Error> {
        let idle = if self.idle.connections > 0 {
            if !self.keep_alive {
                return Err(Error::spec(
                    "idle.connections",
                    "idle.connections are keep-alive connections, and keep_alive is off; turn keep_alive on or set idle.connections to 0".into(),
                ));
            }
            let ping = match self.idle.ping {
                Some(p) => Some(seconds("idle.ping", p, false)?),
                None => None,
            };
            Some(IdleSettings {
                connections: self.idle.connections,
                ping,
            })
        } else {
            None
        };
        let slow = if self.slow.clients > 0 {
            let slow = SlowSettings::of(&self.slow, first_path)?;
            Some(slow)
        } else {
            None
        };
        Ok((idle, slow))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(f: &dyn Fn(&mut LoadSpec)) -> Result<super::super::Resolved, String> {
        let mut s = LoadSpec {
            urls: vec!["http://127.0.0.1:1/a".into()],
            ..Default::default()
        };
        f(&mut s);
        s.resolve().map_err(|e| e.to_string())
    }

    #[test]
    fn fills_in_the_modes_defaults() {
        let r = resolve(&|s| {
            s.slow.clients = 5;
            s.slow.mode = SlowMode::Read;
        })
        .unwrap();
        let slow = r.slow.unwrap();
        assert_eq!(
            (slow.interval, slow.chunk_bytes, slow.window_bytes),
            (Duration::from_secs(1), 32, 4096)
        );
        assert_eq!(slow.path, "/a");
        assert!(r.idle.is_none());
        let r = resolve(&|s| s.slow.clients = 5).unwrap();
        assert_eq!(r.slow.unwrap().interval, Duration::from_secs(10));
    }

    #[test]
    fn refuses_what_cannot_be_done_in_one_line() {
        let refused = |f: &dyn Fn(&mut LoadSpec), says: &str| {
            let e = resolve(f).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{e}");
        };
        refused(
            &|s| {
                s.idle.connections = 3;
                s.keep_alive = false;
            },
            "keep_alive is off",
        );
        refused(
            &|s| {
                s.idle.connections = 3;
                s.idle.ping = Some(0.0);
            },
            "idle.ping must be more than 0",
        );
        refused(
            &|s| {
                s.slow.clients = 3;
                s.slow.chunk_bytes = Some(0);
            },
            "slow.chunk_bytes must be at least 1",
        );
        refused(
            &|s| {
                s.slow.clients = 3;
                s.slow.path = Some("big".into());
            },
            "is no path",
        );
        // Without clients the rest is not looked at.
        assert!(resolve(&|s| s.slow.chunk_bytes = Some(0)).is_ok());
    }
}
