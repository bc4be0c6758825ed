// A stand-in for FCM HTTP v1 over TLS + HTTP/2, for tests and Benchmarks/v1.sh: node's built-in http2 module, no
// packages. It answers the OAuth token endpoint (POST /token) and messages:send (200 {"name": ...}) after a fixed
// delay, allows a fixed number of concurrent streams per connection (100, as Google does), and counts what
// arrives, so a test or a benchmark can check what really went on the wire.
//
//   node fcm-h2-standin.js --cert cert.pem --key key.pem [--delay-ms 30] [--streams 100]
//                          [--drop-after N] [--goaway-after N] [--refuse-every N] [--no-h2 1] [--token-ttl-s 3600]
//                          [--arrivals FILE]
//
// Prints one JSON line {"port": P, "stats_port": S} once listening (both 127.0.0.1, ephemeral). GET
// http://127.0.0.1:S/stats answers the counts:
//   sessions         TLS connections accepted in all; message_sessions those that carried messages:send requests
//   open_sessions    connections open now; peak_sessions the most open at once
//   in_flight        message requests in flight now, over all connections; session_in_flight the same per
//                    open connection
//   peak_streams     the most message requests in flight at once, over all connections
//   peak_session_streams  the most in flight at once on any one connection
//   requests         messages:send requests received complete (body and all)
//   duplicates       of those, requests whose body had already arrived once
//   refused          messages:send streams closed with REFUSED_STREAM (--refuse-every), not counted in requests
//   token_requests   POST /token requests
//   tokens_issued    distinct access tokens handed out
//   http_versions    requests per HTTP version
//   first_body       the body of the first messages:send request (for a load tool to send the same)
//   first_authorization  its Authorization header
// --drop-after N: once, when the Nth message request has arrived, the connection carrying it gets a
// GOAWAY(INTERNAL_ERROR) naming the last stream opened and is then closed without an answer to any request in
// flight on it: what an nghttp2 server does when a client trips its rapid-reset limit, or a server that crashes.
// --goaway-after N: once, when the Nth message request has arrived, the connection carrying it gets a graceful
// GOAWAY(NO_ERROR) naming the last stream opened, and the requests up to it are still answered: what Google does
// when a connection has lived long enough. Streams above it were never processed, and a client may send them again.
// --refuse-every N: every Nth messages:send body not refused before has its stream closed with REFUSED_STREAM
// instead of an answer, unprocessed (RFC 9113 section 8.7): a client may send it again, and it is then answered.
// --no-h2 1: HTTPS with HTTP/1.1 only (ALPN offers no h2), for a client's fallback.
// --hold-first N: the first N messages:send requests are answered only after --hold-ms (default 60000) instead of
// --delay-ms: they are certainly still in flight when a test plays a network fault, and what is sent after them
// (the retries) is answered at the usual delay. POST http://127.0.0.1:S/stop-holding ends the holding early: the
// requests held stay held, every later one is answered at --delay-ms (a test that plays its fault as soon as
// requests are held, before any of them can time out, has the retries answered whatever arrived before the fault).
// POST /echo answers 200 with the request body, and what arrived in x-seen-* headers (method, path, content-type,
// authorization, content-length, any other header's name) plus retry-after: 7; not counted as a message request.
// --arrivals FILE: one line per messages:send request, "TOKEN ARRIVAL_US", written when its body has arrived
// (ARRIVAL_US: wall-clock microseconds, for a benchmark to join with the times its load tool saw the 202; TOKEN: the
// body's message.token or message.fid). The file is complete once the stand-in has exited after SIGTERM.
'use strict';
const http2 = require('http2');
const http = require('http');
const fs = require('fs');
const args = require('./lib-args');

const options = args.parse({
    delayMs: 30, streams: 100, dropAfter: 0, goawayAfter: 0, refuseEvery: 0, noH2: 0, tokenTtlS: 3600, holdFirst: 0,
    holdMs: 60000, cert: null, key: null, arrivals: null,
});
args.required(options, ['cert', 'key']);

const stats = {
    sessions: 0, message_sessions: 0, open_sessions: 0, peak_sessions: 0, peak_streams: 0, peak_session_streams: 0,
    requests: 0, duplicates: 0, refused: 0, token_requests: 0, tokens_issued: 0, http_versions: {},
    first_body: null, first_authorization: null,
};
const seenBodies = new Set();
// Buffered: a write per request would cost the stand-in more than the answer does.
const arrivals = options.arrivals ? fs.createWriteStream(options.arrivals) : null;
const { performance } = require('perf_hooks');
const nowMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const targetPattern = /"(?:token|fid)":"([^"\\]*)"/;
let inFlight = 0;
let dropped = false;
let wentAway = false;
const refusedBodies = new Set();
let refusalCandidates = 0;

const tlsOptions = { cert: fs.readFileSync(options.cert), key: fs.readFileSync(options.key) };
const server = options.noH2
    ? require('https').createServer(tlsOptions)
    : http2.createSecureServer(Object.assign({ settings: { maxConcurrentStreams: options.streams }, allowHTTP1: true },
        tlsOptions));

server.on('session', (session) => {
    stats.sessions++;
    stats.open_sessions++;
    stats.peak_sessions = Math.max(stats.peak_sessions, stats.open_sessions);
    session.heraldInFlight = 0;
    // The highest stream opened (its HEADERS arrived): what a GOAWAY must name as the last one processed, since
    // node goes on with every stream it has opened. Once a GOAWAY has named one, the streams above it are refused
    // unprocessed (REFUSED_STREAM), as RFC 9113 section 6.8 requires of the sender.
    session.heraldLastOpened = 0;
    session.heraldGoawayLast = null;
    session.on('stream', (stream) => {
        session.heraldLastOpened = Math.max(session.heraldLastOpened, stream.id);
    });
    session.on('close', () => { stats.open_sessions--; });
    session.on('error', () => {});
});

server.on('request', (req, res) => {
    const opened = req.stream;
    if (opened && opened.session && opened.session.heraldGoawayLast !== null
        && opened.id > opened.session.heraldGoawayLast) {
        opened.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return;
    }
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('error', () => {});
    res.on('error', () => {});
    req.on('end', () => {
        // A stream reset or cut before its body arrived ends with no body: that request never reached the stand-in
        // (counting it would also count two such streams as one body "received twice").
        if (req.aborted || (req.method === 'POST' && chunks.length === 0)) return;
        const body = Buffer.concat(chunks).toString();
        const version = req.httpVersion;
        stats.http_versions[version] = (stats.http_versions[version] || 0) + 1;
        if (req.method === 'POST' && req.url === '/token') {
            stats.token_requests++;
            stats.tokens_issued++;
            const token = `ya29.standin-${stats.tokens_issued}`;
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ access_token: token, expires_in: options.tokenTtlS, token_type: 'Bearer' }));
            return;
        }
        if (req.method === 'POST' && req.url.split('?')[0] === '/echo') {
            const seen = {
                'x-seen-method': req.method, 'x-seen-path': req.url,
                'x-seen-content-type': req.headers['content-type'] || '-',
                'x-seen-authorization': req.headers.authorization || '-',
                'x-seen-content-length': req.headers['content-length'] || '-',
                'x-seen-headers': Object.keys(req.headers).filter((name) => !name.startsWith(':')).sort().join(','),
                'x-seen-version': version, 'retry-after': '7', 'content-type': 'application/octet-stream',
            };
            res.writeHead(200, seen);
            res.end(Buffer.concat(chunks));
            return;
        }
        if (req.method !== 'POST' || !/^\/v1\/projects\/[^/]+\/messages:send$/.test(req.url)) {
            res.writeHead(404, { 'content-type': 'application/json' });
            res.end('{"error":{"code":404,"status":"NOT_FOUND","message":"no such endpoint"}}');
            return;
        }
        if (options.refuseEvery > 0 && req.stream && !refusedBodies.has(body)
            && ++refusalCandidates % options.refuseEvery === 0) {
            refusedBodies.add(body);
            stats.refused++;
            req.stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
            return;
        }
        stats.requests++;
        if (arrivals) {
            const target = targetPattern.exec(body);
            arrivals.write(`${target ? target[1] : '-'} ${nowMicros()}\n`);
        }
        if (stats.first_body === null) {
            stats.first_body = body;
            stats.first_authorization = req.headers.authorization || null;
        }
        if (seenBodies.has(body)) stats.duplicates++; else seenBodies.add(body);
        const session = req.stream ? req.stream.session : null;
        inFlight++;
        stats.peak_streams = Math.max(stats.peak_streams, inFlight);
        if (session && !session.heraldCarriedMessages) {
            session.heraldCarriedMessages = true;
            stats.message_sessions++;
        }
        if (session) {
            session.heraldInFlight++;
            stats.peak_session_streams = Math.max(stats.peak_session_streams, session.heraldInFlight);
        }
        let done = false;
        const finish = () => {
            if (done) return;
            done = true;
            inFlight--;
            if (session) session.heraldInFlight--;
        };
        res.on('close', finish);
        if (options.goawayAfter > 0 && !wentAway && stats.requests >= options.goawayAfter && session) {
            wentAway = true;
            session.heraldGoawayLast = session.heraldLastOpened;
            session.goaway(http2.constants.NGHTTP2_NO_ERROR, session.heraldGoawayLast);
        }
        if (options.dropAfter > 0 && !dropped && stats.requests >= options.dropAfter && session) {
            dropped = true;
            session.heraldGoawayLast = session.heraldLastOpened;
            session.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR, session.heraldGoawayLast);
            setTimeout(() => session.destroy(), 5);
            return;
        }
        setTimeout(() => {
            if (res.destroyed || res.writableEnded) return finish();
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(`{"name":"projects/standin/messages/${stats.requests}"}`);
            finish();
        }, stats.requests <= options.holdFirst ? options.holdMs : options.delayMs);
    });
});

const sessions = new Set();
server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
});

const statsServer = http.createServer((req, res) => {
    req.resume();
    if (req.method === 'POST' && req.url === '/stop-holding') options.holdFirst = 0;
    res.writeHead(200, { 'content-type': 'application/json' });
    const now = { in_flight: inFlight, session_in_flight: [...sessions].map((s) => s.heraldInFlight || 0) };
    res.end(JSON.stringify(Object.assign({}, stats, now)));
});

args.listenAndAnnounce(server, statsServer);
process.on('SIGTERM', () => {
    if (arrivals) arrivals.end(() => process.exit(0)); else process.exit(0);
});
