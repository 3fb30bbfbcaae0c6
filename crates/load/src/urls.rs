//! `--urls-from-file`: a list of URLs, each with an optional weight, read into the spec's `urls`
//! and `weights`; an access log's mix, as `httpbench load` read it, into `urls` and the order.

use std::path::Path;

use httpbench_engine::spec::{LoadSpec, Order};

/// An access log's mix (httpbench.site.access_log, written by `httpbench load` for
/// `--access-log`): its paths, and the spec's fields that order them.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogMix {
    urls: Vec<String>,
    weights: Option<Vec<f64>>,
    #[serde(default)]
    order: Order,
    sequence: Option<Vec<u32>>,
    offsets: Option<Vec<f64>>,
    #[serde(default = "one")]
    speed: f64,
    expect_lengths: Option<Vec<u64>>,
    #[serde(default)]
    learn_lengths: bool,
}

fn one() -> f64 {
    1.0
}

impl LogMix {
    pub fn onto(self, spec: &mut LoadSpec) {
        spec.urls = self.urls;
        spec.weights = self.weights;
        spec.order = self.order;
        spec.sequence = self.sequence;
        spec.offsets = self.offsets;
        spec.speed = self.speed;
        if self.expect_lengths.is_some() {
            spec.expect_lengths = self.expect_lengths;
        }
        spec.learn_lengths = self.learn_lengths;
    }
}

/// The mix in the file at `path`, its paths joined to the scheme, host and port of the first
/// URL `given`.
pub fn read_log_mix(path: &Path, given: &[String]) -> Result<LogMix, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the access log's mix {}: {e}", path.display()))?;
    let mut mix: LogMix = serde_json::from_str(&text)
        .map_err(|e| format!("the access log's mix {} is not one: {e}", path.display()))?;
    let Some(origin) = given.first().map(|u| origin_of(u)) else {
        return Err("--access-log gives paths: give a URL for their scheme, host and port, e.g. http://127.0.0.1:8080/".into());
    };
    for url in &mut mix.urls {
        *url = format!("{origin}{url}");
    }
    Ok(mix)
}

/// The URLs to request and their weights (None: no line gave one, so round robin as before).
#[derive(Debug, PartialEq)]
pub struct UrlMix {
    pub urls: Vec<String>,
    pub weights: Option<Vec<f64>>,
}

/// The URLs given on the command line (`given`) and in the file at `path`. A line is a URL or a
/// path, alone (weight 1) or with its weight before or after it; blank lines and `#` comments are
/// skipped. A path takes the scheme, host and port of the first URL given, which is then only
/// that: the file's lines are the mix.
pub fn read(path: &Path, given: &[String]) -> Result<UrlMix, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --urls-from-file {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string(), given)
}

fn parse(text: &str, name: &str, given: &[String]) -> Result<UrlMix, String> {
    let origin = given.first().map(|u| origin_of(u));
    let mut lines: Vec<(String, f64)> = Vec::new();
    let (mut weighted, mut paths) = (false, false);
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| format!("{name}:{}: {why}", number + 1);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (target, weight) = match fields[..] {
            [target] => (target, None),
            [a, b] if is_target(a) => (a, Some(b)),
            [a, b] if is_target(b) => (b, Some(a)),
            _ => {
                return Err(bad(format!(
                    "{line:?} is not 'URL-OR-PATH [WEIGHT]'; write e.g. '/index.html 5' or 'http://127.0.0.1:8080/a.css'"
                )))
            }
        };
        let weight = match weight {
            None => 1.0,
            Some(w) => {
                weighted = true;
                match w.parse::<f64>() {
                    Ok(w) if w.is_finite() && w >= 0.0 => w,
                    _ => return Err(bad(format!("weight {w:?} is not a number of 0 or more"))),
                }
            }
        };
        let url = if target.starts_with('/') {
            paths = true;
            match &origin {
                Some(o) => format!("{o}{target}"),
                None => {
                    return Err(bad(format!(
                        "{target} is a path: give a URL on the command line for its scheme, host and port"
                    )))
                }
            }
        } else if target.contains("://") {
            target.to_string()
        } else {
            return Err(bad(format!(
                "{target:?} is neither a URL (http://...) nor a path (/...)"
            )));
        };
        lines.push((url, weight));
    }
    let mut urls: Vec<String> = if paths { Vec::new() } else { given.to_vec() };
    let mut weights = vec![1.0; urls.len()];
    for (url, weight) in lines {
        urls.push(url);
        weights.push(weight);
    }
    Ok(UrlMix {
        urls,
        weights: weighted.then_some(weights),
    })
}

/// Each URL's expected body length under `--docroot`: the length of the file its path names (a
/// directory's index.html, the path percent-decoded, its query left out), as
/// httpbench.site.access_log.file_of names it for a log's paths; only its size is read.
pub fn lengths_under(docroot: &Path, urls: &[String]) -> Result<Vec<u64>, String> {
    urls.iter()
        .map(|url| {
            let after = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
            let path = after.find('/').map_or("/", |i| &after[i..]);
            let path = path.split(['?', '#']).next().unwrap_or(path);
            let mut name = percent_decoded(path.trim_start_matches('/'));
            if name.split('/').any(|part| part == "..") {
                return Err(format!("--docroot: {url} climbs out of {} with '..': give paths under it", docroot.display()));
            }
            if name.is_empty() || name.ends_with('/') {
                name.push_str("index.html");
            }
            std::fs::metadata(docroot.join(&name)).map(|m| m.len()).map_err(|e| {
                format!("--docroot: {url} has no file {name} under {}: {e}; drop the URL or give the document root it is served from", docroot.display())
            })
        })
        .collect()
}

/// `%20` -> ` `; a `%` not followed by two hex digits stays as it is.
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_target(field: &str) -> bool {
    field.starts_with('/') || field.contains("://")
}

/// `scheme://authority` of a URL: what a path is joined to.
fn origin_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?']).next().unwrap_or(rest);
            format!("{scheme}://{authority}")
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_urls_and_weights() {
        let given = vec!["http://h:81/".to_string()];
        let mix = parse(
            "# the site\nhttp://h:81/a 5\n\n2.5 http://h:81/b\nhttp://h:81/c # one\n",
            "f",
            &given,
        )
        .unwrap();
        assert_eq!(
            mix.urls,
            [
                "http://h:81/",
                "http://h:81/a",
                "http://h:81/b",
                "http://h:81/c"
            ]
        );
        assert_eq!(mix.weights, Some(vec![1.0, 5.0, 2.5, 1.0]));
        // Without a weight, as before: every URL round robin.
        assert_eq!(parse("http://h/a\n", "f", &[]).unwrap().weights, None);
        // Paths take the given URL's scheme, host and port, and leave it out of the mix.
        let mix = parse("/a.css 3\n/b.js\n", "f", &given).unwrap();
        assert_eq!(mix.urls, ["http://h:81/a.css", "http://h:81/b.js"]);
        assert_eq!(mix.weights, Some(vec![3.0, 1.0]));
    }

    #[test]
    fn a_docroot_gives_each_url_its_file_s_length() {
        let root = std::env::temp_dir().join(format!("httpbench-docroot-{}", std::process::id()));
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("index.html"), b"12345").unwrap();
        std::fs::write(root.join("d/a b.css"), b"123").unwrap();
        let urls = [
            "http://h/",
            "http://h/d/a%20b.css?v=2",
            "http://h:81/index.html",
        ]
        .map(String::from);
        assert_eq!(lengths_under(&root, &urls), Ok(vec![5, 3, 5]));
        let missing = lengths_under(&root, &["http://h/nope.css".to_string()]).unwrap_err();
        assert!(
            missing.starts_with("--docroot: http://h/nope.css has no file"),
            "{missing}"
        );
        let climbing =
            lengths_under(&root, &["http://h/d/../../etc/passwd".to_string()]).unwrap_err();
        assert!(climbing.contains("climbs out of"), "{climbing}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        for (text, says) in [
            ("/a\n\n/b x\n", "f:3: weight \"x\""),
            ("/a -1\n", "f:1: weight \"-1\""),
            ("/a 1 2\n", "f:1: \"/a 1 2\" is not 'URL-OR-PATH [WEIGHT]'"),
            ("a.html\n", "f:1: \"a.html\" is neither"),
        ] {
            let said = parse(text, "f", &["http://h/".into()]).unwrap_err();
            assert!(said.starts_with(says), "{said}");
        }
        let said = parse("/a\n", "f", &[]).unwrap_err();
        assert!(said.contains("f:1: /a is a path"), "{said}");
    }
}
