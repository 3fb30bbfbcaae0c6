//! The TLS path of a connection: its handshake under the connect timeout, and the records it
//! sends and receives once the handshake is over.

use std::sync::Arc;

use crate::io::Reactor;
use crate::stats::{record_ns, ErrorClass};
use crate::tls::{self, Negotiated, TlsClient};

use super::conn::State;
use super::Worker;

/// One thread's side of TLS.
#[derive(Default)]
pub(super) struct ThreadTls {
    /// The client configuration, with this thread's session store.
    config: Option<Arc<rustls::ClientConfig>>,
    /// Plaintext of the records of one receive, handed to the response parser.
    plaintext: Vec<u8>,
    /// Where the records of one receive are decrypted, in place.
    ciphertext: Vec<u8>,
    /// What this thread's first handshake negotiated.
    pub(super) negotiated: Option<Negotiated>,
}

impl ThreadTls {
    /// For a thread of `connections` connections, of a run over https if `client`.
    pub(super) fn new(client: Option<&TlsClient>, connections: usize) -> ThreadTls {
        ThreadTls {
            config: client.map(|t| t.for_thread(connections)),
            ..ThreadTls::default()
        }
    }
}

impl Worker<'_> {
    /// Send what TLS has to say on connection `i` (handshake messages, encrypted requests), in
    /// one send, unless a send is under way: its completion calls this again.
    pub(super) fn flush_tls<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        let Some(tls) = c.tls.as_mut() else { return };
        if c.sending.is_some() || !tls.wants_write() {
            return;
        }
        tls.take_queued(&mut c.tls_out);
        c.sending = Some((c.tls_out.as_ptr(), c.tls_out.len()));
        // SAFETY: `tls_out` is left alone until this send completes or the socket closes; its
        // heap buffer stays where it is when the connection vector moves.
        unsafe { reactor.send(token, c.fd, c.tls_out.as_ptr(), c.tls_out.len()) };
    }

    /// TCP is up on connection `i`: start its TLS handshake, under the connect timeout.
    pub(super) fn start_handshake<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let (Some(client), Some(config)) = (&self.shared.tls, &self.tls.config) else {
            return;
        };
        match tls::Session::new(client, config) {
            Ok(tls) => {
                let c = &mut self.conns[i];
                c.tls = Some(Box::new(tls));
                c.handshake_started = self.now;
                self.enter_timed(i, State::Handshaking);
                self.flush_tls(reactor, i);
            }
            Err(_) => self.connect_ended(reactor, i, ErrorClass::TlsHandshake),
        }
    }

    /// Ciphertext arrived on connection `i` at `at`: decrypt it, finish the handshake if this
    /// ends it, and hand the plaintext to the response parser.
    pub(super) fn tls_received<R: Reactor>(
        &mut self,
        reactor: &mut R,
        i: usize,
        data: &[u8],
        at: u64,
    ) {
        if self.measuring(self.now) {
            self.counters.bytes_read += data.len() as u64;
        }
        let mut plaintext = std::mem::take(&mut self.tls.plaintext);
        plaintext.clear();
        let c = &mut self.conns[i];
        let Some(tls) = c.tls.as_mut() else { return };
        let handshaking = c.state == State::Handshaking;
        let failed = tls
            .receive(data, &mut self.tls.ciphertext, &mut plaintext)
            .err()
            .map(|e| {
                if let Some(refusal) = self.shared.tls.as_ref().and_then(|t| t.alpn_refusal(&e)) {
                    self.shared.refuse(refusal);
                }
                tls::class_of(&e, tls.state().is_handshaking())
            });
        let done_handshaking = handshaking && failed.is_none() && !tls.state().is_handshaking();
        if let Some(class) = failed {
            self.tls.plaintext = plaintext;
            if handshaking {
                self.connect_ended(reactor, i, class);
            } else {
                self.fail(reactor, i, class);
            }
            return;
        }
        if done_handshaking {
            self.handshake_done(i);
        }
        if !plaintext.is_empty() {
            self.received(reactor, i, &plaintext, at);
        }
        self.tls.plaintext = plaintext;
        let c = &self.conns[i];
        if c.tls.as_ref().is_some_and(|tls| tls.peer_closed())
            && matches!(c.state, State::Open | State::Handshaking)
        {
            // close_notify is the server's end of the connection, as a FIN is: wait for a FIN
            // that may never come (the bytes after close_notify are ignored, RFC 8446 6.1), and
            // the requests sent meanwhile would only time out.
            self.eof(reactor, i);
            return;
        }
        // The handshake's next flight, or the first requests with the handshake's last
        // message, in one send; nothing if the parser closed the connection meanwhile.
        match self.conns[i].state {
            State::Open if done_handshaking => self.send_more(reactor, i),
            State::Open | State::Handshaking => {}
            State::Closed | State::Connecting => return,
        }
        self.flush_tls(reactor, i);
    }

    /// Connection `i`'s handshake is over: time and count it; it may carry requests now.
    pub(super) fn handshake_done(&mut self, i: usize) {
        self.ready(i);
        let measuring = self.measuring(self.conns[i].handshake_started);
        let c = &mut self.conns[i];
        c.state = State::Open;
        if c.sending.is_none() {
            // The ClientHello's room; requests need a fraction of it.
            c.tls_out = Vec::new();
        }
        let Some(tls) = c.tls.as_deref().map(tls::Session::state) else {
            return;
        };
        if measuring {
            if tls::resumed(tls) {
                self.counters.handshakes_resumed += 1;
            } else {
                self.counters.handshakes_full += 1;
            }
            record_ns(
                &mut self.latencies.tls_handshake,
                self.now - c.handshake_started,
            );
        }
        if let Some(Err(refusal)) = self.shared.tls.as_ref().map(|t| t.check_alpn(tls)) {
            self.shared.refuse(refusal);
        }
        if self.tls.negotiated.is_none() {
            self.tls.negotiated = Some(Negotiated::of(tls));
        }
    }
}
