// A stand-in for Apple's Push Notification service over TLS + HTTP/2, for tests and Benchmarks/apns.sh: node's
// built-in http2 module, no packages. POST /3/device/<token> is answered after a fixed delay, as APNs answers it
// (SPEC §15): 200 with the request's apns-id, or Apple's error body {"reason": …} chosen by the token's prefix. The
// provider token (authorization: bearer <ES256 JWT>) is verified with node's crypto against the key's public half:
// an independent check of Herald's signature, its r ‖ s encoding, its kid and its iss.
//
//   node apns-h2-standin.js --cert cert.pem --key key.pem --auth-key public.pem --key-id KEYID --team-id TEAM
//                           [--delay-ms 30] [--streams 100] [--initial-streams 0] [--expire-first 0]
//                           [--arrivals FILE]
//   node apns-h2-standin.js --cert cert.pem --key key.pem --client-ca ca.pem [...]
//
// --client-ca: certificate-based authentication instead of provider tokens (SPEC §22): the TLS handshake requires a
// client certificate issued by ca.pem (no other connection is made), and requests must carry no authorization
// header (those that do are answered 403 and counted as "authorization_headers").
// --initial-streams N (N > 0): each connection's SETTINGS first allow N concurrent streams, raised to --streams once
// its first request has been answered, as Apple does with a connection it has not seen work yet.
// --expire-first 1: the first provider token seen is answered 403 ExpiredProviderToken, every time it comes back.
// Token prefixes: unregistered-  410 Unregistered with "timestamp" = now (ms);
//                 unregistered-at-<ms>-  410 Unregistered with that timestamp;
//                 bad-  400 BadDeviceToken;  topic-  400 DeviceTokenNotForTopic;  toomany-  429 TooManyRequests;
//                 unavail-<n>-  503 ServiceUnavailable the first n times that token arrives, then 200;
//                 anything else 200.
//
// Prints one JSON line {"port": P, "stats_port": S} once listening (both 127.0.0.1, ephemeral). GET
// http://127.0.0.1:S/stats answers {"sessions", "requests", "duplicates" (apns-id seen before, for a 200),
// "peak_session_streams", "over_limit" (requests past the streams a connection's SETTINGS allowed at the time),
// "bad_jwt", "jwts" (distinct provider tokens verified), "expired_answers", "ids": {token: [apns-id, …]},
// "headers": {token: {…}} (the last request's apns-* headers per token), "bodies": {token: body}} — ids, headers and
// bodies only for the first 1000 tokens.
'use strict';
const http2 = require('http2');
const http = require('http');
const fs = require('fs');
const crypto = require('crypto');
const args = require('./lib-args');

const options = args.parse({
    delayMs: 30, streams: 100, initialStreams: 0, expireFirst: 0, cert: null, key: null, authKey: null, keyId: null,
    teamId: null, arrivals: null, clientCa: null,
});
args.required(options, options.clientCa ? ['cert', 'key'] : ['cert', 'key', 'authKey', 'keyId', 'teamId']);

const publicKey = options.clientCa ? null : crypto.createPublicKey(fs.readFileSync(options.authKey));
const stats = {
    sessions: 0, requests: 0, duplicates: 0, peak_session_streams: 0, over_limit: 0, bad_jwt: 0, jwts: 0,
    expired_answers: 0, authorization_headers: 0, client_certificates: {}, ids: {}, headers: {}, bodies: {},
};
const verified = new Map();
// Tokens with ids, headers and bodies kept: a count, as Object.keys(stats.ids) costs ~25 µs a request at 1000 keys.
let recordedTokens = 0;
let firstJWT = null;
const seenIDs = new Set();
const attempts = new Map();
const arrivals = options.arrivals ? fs.createWriteStream(options.arrivals) : null;
const { performance } = require('perf_hooks');
const nowMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

/// Whether the JWT is ES256 over header.claims by the key, with the kid and iss this stand-in was told.
function verify(jwt) {
    if (verified.has(jwt)) return verified.get(jwt);
    let good = false;
    try {
        const [h, c, s] = jwt.split('.');
        const header = JSON.parse(Buffer.from(h, 'base64url'));
        const claims = JSON.parse(Buffer.from(c, 'base64url'));
        good = header.alg === 'ES256' && header.kid === options.keyId && claims.iss === options.teamId
            && Number.isInteger(claims.iat)
            && crypto.verify('sha256', Buffer.from(h + '.' + c), { key: publicKey, dsaEncoding: 'ieee-p1363' },
                Buffer.from(s, 'base64url'));
    } catch (e) { good = false; }
    verified.set(jwt, good);
    if (good) stats.jwts++;
    return good;
}

const initial = options.initialStreams > 0 ? options.initialStreams : options.streams;
const server = http2.createSecureServer(Object.assign({
    cert: fs.readFileSync(options.cert), key: fs.readFileSync(options.key),
    settings: { maxConcurrentStreams: initial },
}, options.clientCa ? { requestCert: true, rejectUnauthorized: true, ca: fs.readFileSync(options.clientCa) } : {}));

server.on('session', (session) => {
    stats.sessions++;
    if (options.clientCa) {
        // Sessions exist only after a handshake with a certificate the CA issued (rejectUnauthorized).
        const subject = session.socket.getPeerCertificate().subject || {};
        const name = subject.UID || subject.CN || '?';
        stats.client_certificates[name] = (stats.client_certificates[name] || 0) + 1;
    }
    session.heraldOpen = 0;
    session.heraldAllowed = initial;
    session.on('error', () => {});
});

function answer(res, status, headers, body) {
    res.writeHead(status, Object.assign({}, headers, body ? { 'content-type': 'application/json' } : {}));
    res.end(body ? JSON.stringify(body) : undefined);
}

server.on('stream', (stream, headers) => {
    const session = stream.session;
    session.heraldOpen++;
    if (session.heraldOpen > session.heraldAllowed) stats.over_limit++;
    stats.peak_session_streams = Math.max(stats.peak_session_streams, session.heraldOpen);
    stream.on('close', () => { session.heraldOpen--; });
    stream.on('error', () => {});
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => {
        const path = headers[':path'] || '';
        const match = /^\/3\/device\/([^/?]+)$/.exec(path);
        if (headers[':method'] !== 'POST' || !match) {
            return answer(wrap(stream), 404, {}, { reason: "BadPath" });
        }
        const token = decodeURIComponent(match[1]);
        const id = headers['apns-id'] || crypto.randomUUID();
        const res = wrap(stream);
        const auth = headers.authorization || '';
        const jwt = auth.startsWith('bearer ') ? auth.slice(7) : '';
        stats.requests++;
        if (arrivals) arrivals.write(`${token} ${nowMicros()}\n`);
        if (recordedTokens < 1000 || stats.ids[token]) {
            if (!stats.ids[token]) { stats.ids[token] = []; recordedTokens++; }
            stats.ids[token].push(id);
            const apns = {};
            for (const name of Object.keys(headers)) if (name.startsWith('apns-')) apns[name] = headers[name];
            stats.headers[token] = apns;
            stats.bodies[token] = Buffer.concat(chunks).toString();
        }
        if (options.clientCa) {
            if (auth) {
                stats.authorization_headers++;
                return later(() => answer(res, 403, { 'apns-id': id }, { reason: 'InvalidProviderToken' }));
            }
        } else if (!verify(jwt)) {
            stats.bad_jwt++;
            return later(() => answer(res, 403, { 'apns-id': id }, { reason: 'InvalidProviderToken' }));
        }
        if (firstJWT === null) firstJWT = jwt;
        if (options.expireFirst && jwt === firstJWT) {
            stats.expired_answers++;
            return later(() => answer(res, 403, { 'apns-id': id }, { reason: 'ExpiredProviderToken' }));
        }
        const count = (attempts.get(token) || 0) + 1;
        attempts.set(token, count);
        let status = 200;
        let body = null;
        const at = /^unregistered-at-(\d+)-/.exec(token);
        const unavailable = /^unavail-(\d+)-/.exec(token);
        if (at) { status = 410; body = { reason: 'Unregistered', timestamp: Number(at[1]) }; }
        else if (token.startsWith('unregistered-')) { status = 410; body = { reason: 'Unregistered', timestamp: Date.now() }; }
        else if (token.startsWith('bad-')) { status = 400; body = { reason: 'BadDeviceToken' }; }
        else if (token.startsWith('topic-')) { status = 400; body = { reason: 'DeviceTokenNotForTopic' }; }
        else if (token.startsWith('toomany-')) { status = 429; body = { reason: 'TooManyRequests' }; }
        else if (unavailable && count <= Number(unavailable[1])) { status = 503; body = { reason: 'ServiceUnavailable' }; }
        if (status === 200) {
            if (seenIDs.has(id)) stats.duplicates++; else seenIDs.add(id);
        }
        later(() => {
            answer(res, status, { 'apns-id': id }, body);
            if (session.heraldAllowed < options.streams && !session.destroyed) {
                session.heraldAllowed = options.streams;
                session.settings({ maxConcurrentStreams: options.streams });
            }
        });
    });
});

/// The compatibility-free response of a raw stream, shaped like `res` for `answer`.
function wrap(stream) {
    return {
        writeHead: (status, headers) => { if (!stream.destroyed) stream.respond(Object.assign({ ':status': status }, headers)); },
        end: (body) => { if (!stream.destroyed) stream.end(body); },
    };
}

function later(action) {
    if (options.delayMs > 0) setTimeout(action, options.delayMs); else action();
}

const statsServer = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
});

args.listenAndAnnounce(server, statsServer);
const stop = () => {
    if (arrivals) arrivals.end(() => process.exit(0)); else process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
