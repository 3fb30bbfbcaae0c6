//! Requests, built once before the load starts.
//!
//! Every request of a run is laid out in one buffer, the URL cycle followed by as many of its
//! first requests again as the pipeline is deep. Any `k <= depth` consecutive requests of the
//! round robin, starting anywhere in the cycle, are then one contiguous slice: a pipelined burst
//! is a single send with no copy and no allocation.

use crate::spec::{LoadSpec, Target};

pub struct RequestSet {
    bytes: Vec<u8>,
    /// Start of every request in `bytes`, and the end of the last one.
    starts: Vec<usize>,
    cycle: usize,
}

impl RequestSet {
    pub fn build(spec: &LoadSpec, targets: &[Target], depth: usize) -> RequestSet {
        let one: Vec<Vec<u8>> = targets.iter().map(|t| render(spec, t)).collect();
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(one.len() + depth + 1);
        for i in 0..one.len() + depth {
            starts.push(bytes.len());
            bytes.extend_from_slice(&one[i % one.len()]);
        }
        starts.push(bytes.len());
        RequestSet {
            bytes,
            starts,
            cycle: one.len(),
        }
    }

    /// How many distinct requests there are.
    pub fn cycle(&self) -> usize {
        self.cycle
    }

    /// The requests for `urls`, in order, as one slice: a window of the set where they follow
    /// each other round robin (`consecutive`) or are one, else copied into `burst`, whose
    /// capacity stays for the next.
    pub fn burst<'r>(
        &'r self,
        mut urls: impl ExactSizeIterator<Item = usize>,
        consecutive: bool,
        burst: &'r mut Vec<u8>,
    ) -> &'r [u8] {
        let k = urls.len();
        let Some(first) = urls.next() else {
            return &[];
        };
        if consecutive || k == 1 {
            return self.window(first, k);
        }
        burst.clear();
        burst.extend_from_slice(self.window(first, 1));
        for url in urls {
            burst.extend_from_slice(self.window(url, 1));
        }
        burst
    }

    /// The `k` requests that follow request `first` of the cycle, as one slice.
    pub fn window(&self, first: usize, k: usize) -> &[u8] {
        debug_assert!(first < self.cycle && k + 1 < self.starts.len() - first);
        &self.bytes[self.starts[first]..self.starts[first + k]]
    }
}

/// The request line and headers. Headers given by the user replace the defaults of the same name.
pub fn render(spec: &LoadSpec, target: &Target) -> Vec<u8> {
    let version = if spec.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let mut out = format!("{} {} {}\r\n", spec.method, target.path, version).into_bytes();
    let given = |name: &str| {
        spec.headers.iter().any(|h| {
            h.split(':')
                .next()
                .is_some_and(|n| n.trim().eq_ignore_ascii_case(name))
        })
    };
    let mut header = |name: &str, value: &str| {
        if !given(name) {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
    };
    header("Host", &target.authority);
    header(
        "User-Agent",
        concat!("httpbench/", env!("CARGO_PKG_VERSION")),
    );
    header("Accept", "*/*");
    // Without keep-alive the client closes after each response anyway; saying so spares a
    // compliant server from waiting for a next request that never comes.
    if !spec.keep_alive {
        header("Connection", "close");
    } else if spec.http10 {
        header("Connection", "keep-alive");
    }
    if let Some(body) = &spec.body {
        header("Content-Length", &body.len().to_string());
    }
    for h in &spec.headers {
        let (name, value) = h
            .split_once(':')
            .expect("headers are checked by LoadSpec::resolve");
        out.extend_from_slice(format!("{}: {}\r\n", name.trim(), value.trim()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = &spec.body {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_wrap_around_the_url_cycle() {
        let spec = LoadSpec {
            urls: vec![
                "http://h/a".into(),
                "http://h/b".into(),
                "http://h/c".into(),
            ],
            ..Default::default()
        };
        let targets: Vec<Target> = spec
            .urls
            .iter()
            .map(|u| Target::parse(u).unwrap())
            .collect();
        let set = RequestSet::build(&spec, &targets, 4);
        let text = String::from_utf8(set.window(2, 4).to_vec()).unwrap();
        let paths: Vec<&str> = text.lines().filter(|l| l.starts_with("GET")).collect();
        assert_eq!(
            paths,
            [
                "GET /c HTTP/1.1",
                "GET /a HTTP/1.1",
                "GET /b HTTP/1.1",
                "GET /c HTTP/1.1"
            ]
        );
    }

    #[test]
    fn user_headers_replace_defaults() {
        let spec = LoadSpec {
            urls: vec!["http://h:81/".into()],
            headers: vec!["host: other".into(), "X-A: 1".into()],
            keep_alive: false,
            body: Some("abc".into()),
            method: "POST".into(),
            ..Default::default()
        };
        let text =
            String::from_utf8(render(&spec, &Target::parse("http://h:81/").unwrap())).unwrap();
        assert!(!text.contains("Host: h:81"));
        assert!(text.contains("host: other\r\n") && text.contains("X-A: 1\r\n"));
        assert!(text.contains("Connection: close\r\n") && text.contains("Content-Length: 3\r\n"));
        assert!(text.starts_with("POST / HTTP/1.1\r\n") && text.ends_with("\r\n\r\nabc"));
    }
}
