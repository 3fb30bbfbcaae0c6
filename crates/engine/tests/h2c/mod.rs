//! A cleartext server for the engine's HTTP/2 tests: a loopback listener, a thread per
//! connection running `answer` on it with the connection's number (from 0); it lives as long as
//! the test process.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

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
