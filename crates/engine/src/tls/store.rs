//! A client session store that lets every connection of a thread resume.
//!
//! rustls' own store keeps a few TLS 1.3 tickets per server and hands each out once, so a run
//! whose connections open faster than tickets arrive falls back to full handshakes, and a
//! "resumed" run measures a mix. The engine talks to one server, so this store keeps, for it,
//! the latest TLS 1.2 session (served to every connection: a session ID or ticket may be offered
//! again and again) and a pool of every TLS 1.3 ticket the server issued and no connection used
//! yet: rustls takes each at most once, as RFC 8446 (appendix C.4) asks and browsers do.
//!
//! How long the pool lasts is the server's doing. nginx sends a new ticket on every resumed
//! handshake, so the pool refills as fast as it drains; lighttpd and h2o send two on a full
//! handshake and none on a resumed one (seen with `openssl s_client -msg`), so one handshake in
//! three is full once the tickets of the first wave are spent, for this client as for a browser.

use std::collections::VecDeque;
use std::sync::Mutex;

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

#[derive(Debug, Default)]
struct Latest {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

/// One server's sessions, shared by the connections of one engine thread (so its lock is never
/// contended). The server name is not checked: a run has one.
#[derive(Debug)]
pub struct SessionStore {
    latest: Mutex<Latest>,
    /// How many TLS 1.3 tickets are kept at most: every ticket of a first wave of full
    /// handshakes (servers send two each), with room to spare.
    tickets: usize,
}

impl SessionStore {
    pub fn new(connections: usize) -> SessionStore {
        SessionStore {
            latest: Mutex::new(Latest::default()),
            tickets: (4 * connections).clamp(4, 65536),
        }
    }

    fn latest(&self) -> std::sync::MutexGuard<'_, Latest> {
        self.latest.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ClientSessionStore for SessionStore {
    fn set_kx_hint(&self, _: ServerName<'static>, group: NamedGroup) {
        self.latest().kx_hint = Some(group);
    }

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        self.latest().kx_hint
    }

    fn set_tls12_session(&self, _: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.latest().tls12 = Some(value);
    }

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.latest().tls12.clone()
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {
        self.latest().tls12 = None;
    }

    fn insert_tls13_ticket(&self, _: ServerName<'static>, value: Tls13ClientSessionValue) {
        let mut latest = self.latest();
        if latest.tls13.len() >= self.tickets {
            latest.tls13.pop_front();
        }
        latest.tls13.push_back(value);
    }

    fn take_tls13_ticket(&self, _: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        // The newest first: the oldest are the likeliest to have expired at the server.
        self.latest().tls13.pop_back()
    }
}
