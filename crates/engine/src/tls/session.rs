//! One connection's TLS on buffers the engine owns: rustls' unbuffered API.
//!
//! rustls' buffered `ClientConnection` allocates a record for every write and every read (two
//! allocations per request, measured with dhat) and keeps a receive buffer of at least 4 KiB per
//! connection, idle or not. Here records are decrypted in place in the thread's scratch buffer,
//! the plaintext goes to the thread's plaintext buffer, and what TLS has to send is encoded into
//! `queued`, which keeps its capacity: a connection holds buffers of its own only for the part
//! of a record that a receive cut off, and for its next send.

use std::sync::Arc;

use rustls::client::UnbufferedClientConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use rustls::{ClientConfig, CommonState};

use super::TlsClient;

pub struct Session {
    conn: UnbufferedClientConnection,
    /// Ciphertext of a record whose end has not arrived yet.
    partial: Vec<u8>,
    /// Records to send, in order.
    queued: Vec<u8>,
    peer_closed: bool,
}

/// Encode into the end of `out`, growing it as `encode` says it must: a first guess of 0 asks
/// for the exact size, so that a handshake's few large messages leave no large buffers behind
/// on every idle connection.
fn encode_into<E>(
    out: &mut Vec<u8>,
    first_guess: usize,
    mut encode: impl FnMut(&mut [u8]) -> Result<usize, E>,
    required: impl Fn(&E) -> Option<usize>,
) -> Result<(), E> {
    let at = out.len();
    let mut room = first_guess;
    loop {
        out.resize(at + room, 0);
        match encode(&mut out[at..]) {
            Ok(n) => {
                out.truncate(at + n);
                return Ok(());
            }
            Err(e) => match required(&e) {
                Some(size) if size > room => room = size,
                _ => {
                    out.truncate(at);
                    return Err(e);
                }
            },
        }
    }
}

fn encode_error(e: EncodeError) -> rustls::Error {
    rustls::Error::General(e.to_string())
}

fn encrypt_error(e: EncryptError) -> rustls::Error {
    rustls::Error::General(e.to_string())
}

impl Session {
    /// A connection to `client`'s server, its ClientHello queued.
    pub fn new(client: &TlsClient, config: &Arc<ClientConfig>) -> Result<Session, rustls::Error> {
        let mut session = Session {
            conn: UnbufferedClientConnection::new(config.clone(), client.server_name.clone())?,
            partial: Vec::new(),
            queued: Vec::new(),
            peer_closed: false,
        };
        session.process(&mut [], &mut Vec::new())?;
        Ok(session)
    }

    /// Take the records of `buf` that are whole, their plaintext appended to `plaintext`, their
    /// answers (handshake flights) queued; returns how many bytes of `buf` were used.
    fn process(&mut self, buf: &mut [u8], plaintext: &mut Vec<u8>) -> Result<usize, rustls::Error> {
        let mut used = 0;
        loop {
            let UnbufferedStatus { mut discard, state } =
                self.conn.process_tls_records(&mut buf[used..]);
            let more = match state? {
                ConnectionState::ReadTraffic(mut records) => {
                    while let Some(record) = records.next_record() {
                        let record = record?;
                        discard += record.discard;
                        plaintext.extend_from_slice(record.payload);
                    }
                    true
                }
                ConnectionState::EncodeTlsData(mut data) => {
                    encode_into(
                        &mut self.queued,
                        0,
                        |out| data.encode(out),
                        |e| match e {
                            EncodeError::InsufficientSize(s) => Some(s.required_size),
                            _ => None,
                        },
                    )
                    .map_err(encode_error)?;
                    true
                }
                // The worker sends `queued` before anything it queues later.
                ConnectionState::TransmitTlsData(data) => {
                    data.done();
                    true
                }
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    self.peer_closed = true;
                    false
                }
                // More bytes needed, or nothing left to read.
                _ => false,
            };
            used += discard;
            if !more {
                return Ok(used);
            }
        }
    }

    /// Ciphertext received: its whole records are taken (`scratch` is the thread's room to
    /// decrypt them in), the rest kept for the next receive.
    pub fn receive(
        &mut self,
        data: &[u8],
        scratch: &mut Vec<u8>,
        plaintext: &mut Vec<u8>,
    ) -> Result<(), rustls::Error> {
        // RFC 8446 6.1: "Any data received after a closure alert has been received MUST be
        // ignored." rustls stops reading records at close_notify; kept, the bytes after it would
        // pile up in `partial` for as long as the server goes on.
        if self.peer_closed {
            return Ok(());
        }
        scratch.clear();
        scratch.extend_from_slice(&self.partial);
        scratch.extend_from_slice(data);
        self.partial.clear();
        let used = self.process(scratch, plaintext)?;
        if !self.peer_closed {
            self.partial.extend_from_slice(&scratch[used..]);
        }
        Ok(())
    }

    /// Encrypt `data` into the queue.
    pub fn write(&mut self, data: &[u8]) -> Result<(), rustls::Error> {
        loop {
            match self.conn.process_tls_records(&mut []).state? {
                ConnectionState::WriteTraffic(mut traffic) => {
                    return encode_into(
                        &mut self.queued,
                        data.len() + 64,
                        |out| traffic.encrypt(data, out),
                        |e| match e {
                            EncryptError::InsufficientSize(s) => Some(s.required_size),
                            _ => None,
                        },
                    )
                    .map_err(encrypt_error);
                }
                ConnectionState::EncodeTlsData(mut tls) => encode_into(
                    &mut self.queued,
                    0,
                    |out| tls.encode(out),
                    |e| match e {
                        EncodeError::InsufficientSize(s) => Some(s.required_size),
                        _ => None,
                    },
                )
                .map_err(encode_error)?,
                ConnectionState::TransmitTlsData(tls) => tls.done(),
                _ => {
                    return Err(rustls::Error::General(
                        "the connection cannot carry data now".into(),
                    ))
                }
            }
        }
    }

    /// Whether there is something to send.
    pub fn wants_write(&self) -> bool {
        !self.queued.is_empty()
    }

    /// Swap what is queued into `out` (emptied first), keeping both buffers' capacity.
    pub fn take_queued(&mut self, out: &mut Vec<u8>) {
        out.clear();
        std::mem::swap(out, &mut self.queued);
    }

    /// The server sent close_notify: it will send nothing more, whether it closes the TCP
    /// connection or not.
    pub fn peer_closed(&self) -> bool {
        self.peer_closed
    }

    pub fn state(&self) -> &CommonState {
        &self.conn
    }
}
