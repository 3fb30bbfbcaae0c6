//! The document root, read once into memory with every response prebuilt, so that answering a
//! request is a hash lookup and a pointer handed to `sendmsg`: no file system, no formatting.

use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Symbolic links are followed; this bounds a loop of them.
const MAX_DEPTH: usize = 32;

/// One answer (a file, or an error), prebuilt for keep-alive and for close.
pub struct Resource {
    /// Status line, headers with `Connection: keep-alive`, and body, contiguous: the common case
    /// is one slice.
    full: Vec<u8>,
    head_len: usize,
    /// The same headers with `Connection: close`, sent before the shared body: closing is rare,
    /// so the body is not held twice.
    close_head: Vec<u8>,
}

impl Resource {
    fn new(status: &str, content_type: &str, body: &[u8], extra: &str) -> Resource {
        let head = |connection: &str| {
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: {connection}\r\n\r\n",
                body.len()
            )
            .into_bytes()
        };
        let mut full = head("keep-alive");
        let head_len = full.len();
        full.extend_from_slice(body);
        Resource {
            full,
            head_len,
            close_head: head("close"),
        }
    }

    /// Queue this answer on `out`: headers only for HEAD, and the variant that says whether the
    /// connection stays open.
    pub fn reply<'a>(&'a self, head_only: bool, keep_alive: bool, out: &mut Vec<&'a [u8]>) {
        match (head_only, keep_alive) {
            (false, true) => out.push(&self.full),
            (true, true) => out.push(&self.full[..self.head_len]),
            (false, false) => {
                out.push(&self.close_head);
                if self.full.len() > self.head_len {
                    out.push(&self.full[self.head_len..]);
                }
            }
            (true, false) => out.push(&self.close_head),
        }
    }
}

pub struct Files {
    by_path: HashMap<Vec<u8>, usize>,
    resources: Vec<Resource>,
    pub not_found: Resource,
    pub bad_request: Resource,
    pub not_allowed: Resource,
}

impl Files {
    /// Every regular file under `root`, at `/relative/path`; a directory's `index.html` also at
    /// `/dir/`. Each file is held once in memory, so this is for benchmark document roots, not for
    /// large trees.
    pub fn load(root: &Path) -> Result<Files, String> {
        let mut files = Files {
            by_path: HashMap::new(),
            resources: Vec::new(),
            not_found: Resource::new("404 Not Found", "text/plain", b"not found\n", ""),
            bad_request: Resource::new("400 Bad Request", "text/plain", b"bad request\n", ""),
            not_allowed: Resource::new(
                "405 Method Not Allowed",
                "text/plain",
                b"only GET and HEAD\n",
                "Allow: GET, HEAD\r\n",
            ),
        };
        if !root.is_dir() {
            return Err(format!(
                "document root {} is not a directory",
                root.display()
            ));
        }
        let mut dirs: Vec<(PathBuf, Vec<u8>, usize)> = vec![(root.to_path_buf(), b"/".to_vec(), 0)];
        while let Some((dir, url, depth)) = dirs.pop() {
            let entries =
                fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
                let path = entry.path();
                let name = entry.file_name();
                let mut child = url.clone();
                child.extend_from_slice(name.as_bytes());
                // metadata(), not the entry's file type: follow symbolic links as servers do.
                let Ok(meta) = fs::metadata(&path) else {
                    continue;
                };
                if meta.is_dir() && depth < MAX_DEPTH {
                    child.push(b'/');
                    dirs.push((path, child, depth + 1));
                } else if meta.is_file() {
                    let body = fs::read(&path)
                        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                    let index = files.resources.len();
                    files
                        .resources
                        .push(Resource::new("200 OK", content_type(&path), &body, ""));
                    if name == "index.html" {
                        files.by_path.insert(url.clone(), index);
                    }
                    files.by_path.insert(child, index);
                }
            }
        }
        Ok(files)
    }

    pub fn get(&self, path: &[u8]) -> Option<&Resource> {
        self.by_path.get(path).map(|&i| &self.resources[i])
    }

    /// How many files are served (not counting `/dir/` aliases).
    pub fn len(&self) -> usize {
        self.resources.len()
    }
}

/// The types of the files benchmarks serve; anything else is `application/octet-stream`.
fn content_type(path: &Path) -> &'static str {
    let ext = path.extension().map(|e| e.to_ascii_lowercase());
    match ext.as_ref().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "application/javascript",
        "json" => "application/json",
        "txt" => "text/plain",
        "xml" => "text/xml",
        "svg" => "image/svg+xml",
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "wasm" => "application/wasm",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}
