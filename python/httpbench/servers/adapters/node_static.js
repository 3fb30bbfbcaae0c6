// A static file server in plain Node, for httpbench: every file of the document root is read into
// memory at start, then served with keep-alive, an exact Content-Length, a Content-Type by
// extension, 404 for anything else, and never compressed.
//
//   node node_static.js --host H --port P --root DIR [--workers N] [--backlog N] [--set NAME=VALUE ...]
//   node node_static.js --config FILE.json     (the same settings as a JSON object)
//
// --workers N > 1 runs N processes with the cluster module; --set NAME=VALUE sets a property of
// the http.Server (keepAliveTimeout, maxRequestsPerSocket, ...), VALUE read as JSON if it parses.
// HTTPS with the config's "tls" object: {cert, key (PEM files), minVersion, maxVersion,
// sessionTimeout (s), shareTicketKeys (one ticket key for every cluster worker)}.
// HTTP/2 with "http2": true, by the http2 module's compatibility API (the same handler): with
// "tls", h2 by ALPN beside HTTP/1.1 (allowHTTP1); without, h2c by prior knowledge only (Node's
// cleartext HTTP/2 server speaks no HTTP/1.1). "h2settings" are its HTTP/2 SETTINGS.
// "options" are http(s).createServer's own (HTTP/1.1 only), those that cannot be set afterwards:
// connectionsCheckingInterval, how often the header and request timeouts are checked.
'use strict';
const cluster = require('cluster');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const http2 = require('http2');
const https = require('https');
const path = require('path');

const TYPES = {
  '.html': 'text/html', '.htm': 'text/html', '.txt': 'text/plain', '.css': 'text/css',
  '.js': 'text/javascript', '.json': 'application/json', '.xml': 'application/xml',
  '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.gif': 'image/gif',
  '.svg': 'image/svg+xml', '.ico': 'image/x-icon', '.webp': 'image/webp', '.pdf': 'application/pdf',
};

function parseArgs(argv) {
  const opts = { host: '127.0.0.1', port: 8080, root: '.', workers: 1, server: {} };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === '--config') Object.assign(opts, JSON.parse(fs.readFileSync(value, 'utf8')));
    else if (flag === '--set') {
      const eq = value.indexOf('=');
      if (eq < 1) throw new Error(`--set ${value}: expected NAME=VALUE`);
      let v = value.slice(eq + 1);
      try { v = JSON.parse(v); } catch (e) { /* a plain string */ }
      opts.server[value.slice(0, eq)] = v;
    } else if (['--host', '--port', '--root', '--workers', '--backlog'].includes(flag)) opts[flag.slice(2)] = value;
    else throw new Error(`unknown option ${flag}`);
  }
  opts.port = Number(opts.port);
  opts.workers = Math.max(1, Number(opts.workers));
  return opts;
}

// URL path -> {body, headers}; headers are built once, so a request costs one map lookup.
function load(root) {
  const files = new Map();
  (function walk(dir, prefix) {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) { walk(full, prefix + entry.name + '/'); continue; }
      if (!entry.isFile() && !(entry.isSymbolicLink() && fs.statSync(full).isFile())) continue;
      const body = fs.readFileSync(full);
      const headers = {
        'Content-Type': TYPES[path.extname(entry.name).toLowerCase()] || 'application/octet-stream',
        'Content-Length': body.length,
      };
      files.set(prefix + entry.name, { body, headers });
      if (entry.name === 'index.html') files.set(prefix, { body, headers });
    }
  })(root, '/');
  return files;
}

const NOT_FOUND = Buffer.from('not found\n');

// Set by the primary for its workers when they share one session ticket key.
const TICKET_KEYS = 'NODE_STATIC_TICKET_KEYS';

function createServer(opts, handler) {
  const h2 = opts.http2 ? { settings: opts.h2settings || {} } : undefined;
  const http1 = opts.options || {};
  if (!opts.tls) return h2 ? http2.createServer(h2, handler) : http.createServer(http1, handler);
  const tls = opts.tls;
  const options = { cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key) };
  for (const name of ['minVersion', 'maxVersion', 'sessionTimeout']) if (tls[name] !== undefined) options[name] = tls[name];
  if (process.env[TICKET_KEYS]) options.ticketKeys = Buffer.from(process.env[TICKET_KEYS], 'hex');
  if (h2) return http2.createSecureServer({ ...options, ...h2, allowHTTP1: true }, handler);
  return https.createServer({ ...http1, ...options }, handler);
}

function serve(opts) {
  const files = load(opts.root);
  const server = createServer(opts, (req, res) => {
    const q = req.url.indexOf('?');
    let name = q < 0 ? req.url : req.url.slice(0, q);
    try { name = decodeURIComponent(name); } catch (e) { name = ''; }
    const file = (req.method === 'GET' || req.method === 'HEAD') ? files.get(name) : undefined;
    if (file === undefined) {
      res.writeHead(req.method === 'GET' || req.method === 'HEAD' ? 404 : 405,
        { 'Content-Type': 'text/plain', 'Content-Length': NOT_FOUND.length });
      res.end(req.method === 'HEAD' ? undefined : NOT_FOUND);
      return;
    }
    res.writeHead(200, file.headers);
    res.end(req.method === 'HEAD' ? undefined : file.body);
  });
  for (const [name, value] of Object.entries(opts.server)) {
    const kind = `${opts.http2 ? 'http2' : opts.tls ? 'https' : 'http'} server`;
    if (!(name in server)) throw new Error(`the ${kind} has no setting ${name}`);
    server[name] = value;
  }
  // Node's default backlog is 511: past it a connection storm's SYNs are dropped and retried
  // a second later.
  server.listen({ port: opts.port, host: opts.host, backlog: opts.backlog && Number(opts.backlog) });
}

// Workers run this script again with the same arguments, so they read the same settings.
const opts = parseArgs(process.argv.slice(2));

if (opts.workers > 1 && cluster.isPrimary) {
  // Workers accept on the shared socket themselves (SCHED_NONE): with the default round-robin the
  // primary accepts every connection and hands it over, one more hop on the measured path.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  // Each worker would make its own ticket key, and a ticket from one could not resume on another.
  const env = opts.tls && opts.tls.shareTicketKeys ? { [TICKET_KEYS]: crypto.randomBytes(48).toString('hex') } : {};
  for (let i = 0; i < opts.workers; i++) cluster.fork(env);
  // A worker that dies is a failed run, not something to hide by restarting it.
  cluster.on('exit', (worker, code) => { console.error(`worker ${worker.process.pid} exited (${code})`); process.exit(1); });
  // Signal the workers directly: worker.kill() first waits for a graceful disconnect.
  const stop = () => {
    cluster.removeAllListeners('exit');
    for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  serve(opts);
  process.on('SIGTERM', () => process.exit(0));
  console.log(`node_static ${process.pid} serving ${opts.root} on ${opts.host}:${opts.port}`);
}
