//! The server's side of the engine's HTTP/2 tests: a cleartext server (a loopback listener, a
//! thread per connection running `answer` on it with the connection's number, from 0, living as
//! long as the test process), and the client's frames read one by one, over h2c or TLS, with
//! the engine's own frame parser.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use httpbench_engine::h2::frame::{FrameHeader, HEADER_LEN, PREFACE};

/// Serves the first `connections` connections; returns the server's `http://` URL. A read waits
/// 10 s at the most, so that a client that never closes cannot hang a test.
pub fn serve<F>(connections: usize, answer: F) -> String
where
    F: Fn(TcpStream, usize) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for (i, socket) in listener.incoming().take(connections).enumerate() {
            let Ok(socket) = socket else { return };
            socket
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let answer = answer.clone();
            std::thread::spawn(move || answer(socket, i));
        }
    });
    url
}

/// Hands each frame the client sends after its preface to `on`, with its payload and the
/// connection to answer on, until the client closes (or a read times out).
pub fn each_frame<S: Read + Write>(io: &mut S, mut on: impl FnMut(&mut S, FrameHeader, &[u8])) {
    let (mut seen, mut at) = (Vec::new(), PREFACE.len());
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = io.read(&mut buf) {
        seen.extend_from_slice(&buf[..n]);
        while seen.len() >= at + HEADER_LEN {
            let header = FrameHeader::parse(&seen[at..]);
            let start = at + HEADER_LEN;
            let Some(payload) = seen.get(start..start + header.len as usize) else {
                break;
            };
            on(io, header, payload);
            at = start + header.len as usize;
        }
    }
}

/// Sends what the engine's frame writers put in `frames` (failures ignored: the client may be
/// gone, which the test sees otherwise).
pub fn send(io: &mut impl Write, frames: &[u8]) {
    let _ = io.write_all(frames).and_then(|()| io.flush());
}
