// Loopback HTTP proxy that adds `Authorization: Bearer <token>` to every request, so clients that
// cannot send headers (the conformance suites) can test a token-protected server.
//   node auth_proxy.mjs --upstream http://127.0.0.1:8080/mcp [--token T | env MCP_TOKEN] [--port 0] [--max-seconds 1800]
// Prints `auth-proxy listening on http://127.0.0.1:PORT<upstream path>` once ready (port 0 = pick a free one).
// - responses are piped chunk by chunk (SSE streams are never buffered);
// - a Host/Origin naming the proxy itself (any loopback name + the proxy's port) is rewritten to the
//   upstream's host:port, so the server's DNS-rebinding check sees its own address; any other Host/Origin
//   (e.g. evil.example.com) passes through unchanged so that check can still reject it;
// - exits by itself after --max-seconds (a forgotten proxy must not live forever). Env PROXY_LOG=1 logs requests.
import http from 'node:http';

const argv = process.argv.slice(2);
const opt = (n, d) => { const i = argv.indexOf(n); return i >= 0 ? argv[i + 1] : d; };
const upstream = new URL(opt('--upstream', ''));
const token = opt('--token', process.env.MCP_TOKEN);
if (!token) { console.error('auth_proxy: no token (--token or MCP_TOKEN)'); process.exit(2); }
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);
let port;   // the proxy's own port, known once listening

// host:port of the proxy itself -> upstream host:port; anything else unchanged.
const namesProxy = (hostport) => { try { const u = new URL(`http://${hostport}`); return LOOPBACK.has(u.hostname) && Number(u.port) === port; } catch { return false; } };
const strip = (h) => Object.fromEntries(Object.entries(h).filter(([k]) => !HOP.has(k.toLowerCase())));

const server = http.createServer((req, res) => {
  const headers = strip(req.headers);
  if (namesProxy(headers.host ?? '')) headers.host = upstream.host;
  if (headers.origin) { try { const o = new URL(headers.origin); if (namesProxy(o.host)) headers.origin = `${upstream.protocol}//${upstream.host}`; } catch { /* keep as is */ } }
  headers.authorization = `Bearer ${token}`;
  if (process.env.PROXY_LOG) console.error(`auth_proxy: ${req.method} ${req.url} host=${headers.host} origin=${headers.origin ?? '-'} mcp-protocol-version=${headers['mcp-protocol-version'] ?? '-'} mcp-method=${headers['mcp-method'] ?? '-'}`);
  const up = http.request({ host: upstream.hostname.replace(/^\[|\]$/g, ''), port: upstream.port || 80, method: req.method, path: req.url, headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.statusMessage, strip(ur.headers));
    res.flushHeaders();            // an SSE response must reach the client before its first event
    ur.pipe(res);
  });
  up.setNoDelay(true);
  up.on('error', (e) => { if (!res.headersSent) res.writeHead(502).end(`auth_proxy: upstream error: ${e.message}`); else res.destroy(); });
  // Client went away (e.g. it closed a GET SSE stream): close the upstream request too.
  res.on('close', () => { if (!res.writableFinished) up.destroy(); });
  req.pipe(up);
});
server.listen(Number(opt('--port', '0')), '127.0.0.1', () => {
  port = server.address().port;
  console.log(`auth-proxy listening on http://127.0.0.1:${port}${upstream.pathname}`);
});
setTimeout(() => process.exit(0), Number(opt('--max-seconds', '1800')) * 1000).unref();
