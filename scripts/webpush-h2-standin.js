// A stand-in for a browser push service (RFC 8030) over TLS + HTTP/2, for tests and Benchmarks/webpush.sh: node's
// built-in http2 and crypto modules, no packages. It is also an independent implementation of what Herald must get
// right: every VAPID header (RFC 8292) is verified with node's crypto against the key in its k= parameter, and
// every body is decrypted as a browser would (RFC 8291 aes128gcm: ECDH, HKDF-SHA-256, AES-128-GCM, padding).
//
//   node webpush-h2-standin.js --cert cert.pem --key key.pem [--delay-ms 30] [--streams 100] [--decrypt-every 1]
//                              [--shared-subscriber NAME]
//
// Subscriptions are made here, as a browser makes them: POST http://127.0.0.1:S/subscriptions
// {"names": ["gone-1", "ok-1", …]} answers [PushSubscription.toJSON(), …] with endpoints
// https://127.0.0.1:P/push/<name>. POST /push/<name> is answered after --delay-ms by the name's prefix:
//   gone-  410;  notfound-  404;  bad-  400;  big-  413;  forbidden-  403;
//   toomany-<n>-  429 with Retry-After: 1 the first n times;  unavail-<n>-  503 the first n times;
//   anything else  201 Created with a Location.
// A request with a VAPID header that does not verify (or whose aud is not this origin, exp not within 24 h, sub
// missing) is 403; a body of a known subscription that does not decrypt is 400. --decrypt-every N decrypts one
// request in N (a benchmark's stand-in spends its core on answering, not on decrypting every request);
// POST http://127.0.0.1:S/forget-deliveries starts the duplicate count afresh (a benchmark's next drain of the same
// backlog);
// --shared-subscriber NAME decrypts a name the stand-in did not make with the keys of subscription NAME (a
// benchmark's backlog of many endpoints with one key pair).
//
// Prints one JSON line {"port": P, "stats_port": S} once listening (both 127.0.0.1, ephemeral). GET
// http://127.0.0.1:S/stats answers {"connections" (TCP, TLS or not), "sessions", "requests", "delivered", "duplicates" (a subscription given 201
// twice for the same plaintext), "bad_vapid", "vapid_headers" (distinct VAPID headers verified), "audiences", "decrypted",
// "decrypt_failures", "headers": {name: {ttl, urgency, topic, content-encoding, content-type}},
// "plaintexts": {name: text}, "attempts": {name: n}, "sample": {path, headers, body (base64)} of the first request
// that verified} — headers and plaintexts for the first 1000 names.
'use strict';
const http2 = require('http2');
const http = require('http');
const fs = require('fs');
const crypto = require('crypto');
const args = require('./lib-args');

const options = args.parse({ delayMs: 30, streams: 100, decryptEvery: 1, sharedSubscriber: '', cert: null, key: null });
args.required(options, ['cert', 'key']);

const stats = {
    connections: 0, sessions: 0, requests: 0, delivered: 0, duplicates: 0, bad_vapid: 0, vapid_headers: 0, audiences: [],
    decrypted: 0, decrypt_failures: 0, headers: {}, plaintexts: {}, attempts: {}, sample: null,
};
const subscribers = new Map();   // name → { ecdh, publicKey, auth }
const deliveredPlaintexts = new Map();   // name → Set of plaintexts given 201
const verified = new Map();      // header → why not ('' when good)
let recorded = 0;
let origin = '';
let requestNumber = 0;

function hmac(key, data) { return crypto.createHmac('sha256', key).update(data).digest(); }

/// RFC 8291 §3.4 and RFC 8188 §2: the receiver's side, one record.
function decrypt(body, subscriber) {
    const salt = body.subarray(0, 16);
    const idLength = body[20];
    const senderKey = body.subarray(21, 21 + idLength);
    const record = body.subarray(21 + idLength);
    if (idLength !== 65 || record.length < 17) throw new Error('malformed header');
    const secret = subscriber.ecdh.computeSecret(senderKey);
    const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), subscriber.publicKey, senderKey]);
    const ikm = hmac(hmac(subscriber.auth, secret), Buffer.concat([keyInfo, Buffer.from([1])]));
    const prk = hmac(salt, ikm);
    const cek = hmac(prk, Buffer.from('Content-Encoding: aes128gcm\0\x01', 'binary')).subarray(0, 16);
    const nonce = hmac(prk, Buffer.from('Content-Encoding: nonce\0\x01', 'binary')).subarray(0, 12);
    const decipher = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
    decipher.setAuthTag(record.subarray(record.length - 16));
    const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
    let end = padded.length - 1;
    while (end >= 0 && padded[end] === 0) end--;
    if (end < 0 || padded[end] !== 2) throw new Error('no last-record padding delimiter');
    return padded.subarray(0, end).toString();
}

/// '' when `header` is `vapid t=<ES256 JWT>, k=<P-256 point>` signed by that key for this origin; else why not.
function vapidProblem(header) {
    if (verified.has(header)) return verified.get(header);
    let problem = '';
    try {
        const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header || '');
        if (!match) throw new Error('not vapid t=…, k=…');
        const point = Buffer.from(match[2], 'base64url');
        if (point.length !== 65 || point[0] !== 4) throw new Error('k is not an uncompressed P-256 point');
        const key = crypto.createPublicKey({ key: {
            kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'),
            y: point.subarray(33).toString('base64url'),
        }, format: 'jwk' });
        const [h, c, s] = match[1].split('.');
        const jwtHeader = JSON.parse(Buffer.from(h, 'base64url'));
        const claims = JSON.parse(Buffer.from(c, 'base64url'));
        if (jwtHeader.alg !== 'ES256') throw new Error('alg is not ES256');
        if (!crypto.verify('sha256', Buffer.from(h + '.' + c), { key, dsaEncoding: 'ieee-p1363' },
            Buffer.from(s, 'base64url'))) throw new Error('signature does not verify');
        if (claims.aud !== origin) throw new Error(`aud ${claims.aud} is not ${origin}`);
        const now = Date.now() / 1000;
        if (!(claims.exp > now && claims.exp <= now + 86400)) throw new Error('exp not within 24 hours');
        if (!/^(mailto:|https:)/.test(claims.sub || '')) throw new Error('sub missing');
        if (!stats.audiences.includes(claims.aud)) stats.audiences.push(claims.aud);
        stats.vapid_headers++;
    } catch (e) { problem = String(e.message || e); }
    verified.set(header, problem);
    return problem;
}

const server = http2.createSecureServer({
    cert: fs.readFileSync(options.cert), key: fs.readFileSync(options.key),
    settings: { maxConcurrentStreams: options.streams },
});
server.on('connection', () => { stats.connections++; });
server.on('session', (session) => { stats.sessions++; session.on('error', () => {}); });

server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.on('end', () => {
        const answer = (status, extra) => later(() => {
            if (!stream.destroyed) { stream.respond(Object.assign({ ':status': status }, extra || {})); stream.end(); }
        });
        const match = /^\/push\/([^/?]+)$/.exec(headers[':path'] || '');
        if (headers[':method'] !== 'POST' || !match) return answer(404);
        const name = match[1];
        stats.requests++;
        const attempt = (stats.attempts[name] || 0) + 1;
        stats.attempts[name] = attempt;
        const keep = recorded < 1000 || stats.headers[name];
        if (keep) {
            if (!stats.headers[name]) recorded++;
            const kept = {};
            for (const header of ['ttl', 'urgency', 'topic', 'content-encoding', 'content-type']) {
                if (headers[header] !== undefined) kept[header] = headers[header];
            }
            stats.headers[name] = kept;
        }
        if (vapidProblem(headers.authorization)) { stats.bad_vapid++; return answer(403); }
        const body = Buffer.concat(chunks);
        if (stats.sample === null) {
            const kept = {};
            for (const [header, value] of Object.entries(headers)) if (!header.startsWith(':')) kept[header] = value;
            stats.sample = { path: headers[':path'], headers: kept, body: body.toString('base64') };
        }
        const subscriber = subscribers.get(name) || subscribers.get(options.sharedSubscriber);
        let plaintext = null;
        if (subscriber && (requestNumber++ % options.decryptEvery === 0)) {
            try {
                plaintext = decrypt(body, subscriber);
                stats.decrypted++;
                if (keep) stats.plaintexts[name] = plaintext;
            } catch (e) {
                stats.decrypt_failures++;
                return answer(400);
            }
        }
        const counted = (prefix) => {
            const m = new RegExp(`^${prefix}-(\\d+)-`).exec(name);
            return m && attempt <= Number(m[1]);
        };
        if (name.startsWith('gone-')) return answer(410);
        if (name.startsWith('notfound-')) return answer(404);
        if (name.startsWith('bad-')) return answer(400);
        if (name.startsWith('big-')) return answer(413);
        if (name.startsWith('forbidden-')) return answer(403);
        if (counted('toomany')) return answer(429, { 'retry-after': '1' });
        if (counted('unavail')) return answer(503);
        stats.delivered++;
        if (plaintext !== null) {
            const seen = deliveredPlaintexts.get(name) || new Set();
            if (seen.has(plaintext)) stats.duplicates++;
            seen.add(plaintext);
            deliveredPlaintexts.set(name, seen);
        }
        answer(201, { location: `${origin}/m/${stats.delivered}` });
    });
});

function later(action) {
    if (options.delayMs > 0) setTimeout(action, options.delayMs); else action();
}

const statsServer = http.createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/forget-deliveries') {
        deliveredPlaintexts.clear();
        res.writeHead(204);
        return res.end();
    }
    if (req.method === 'POST' && req.url === '/subscriptions') {
        const chunks = [];
        req.on('data', (chunk) => chunks.push(chunk));
        req.on('end', () => {
            const names = JSON.parse(Buffer.concat(chunks).toString() || '{}').names || [];
            const made = names.map((name) => {
                const ecdh = crypto.createECDH('prime256v1');
                const publicKey = ecdh.generateKeys();
                const auth = crypto.randomBytes(16);
                subscribers.set(name, { ecdh, publicKey, auth });
                return { endpoint: `${origin}/push/${name}`, expirationTime: null,
                    keys: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') } };
            });
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify(made));
        });
        return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
});

args.listenAndAnnounce(server, statsServer, () => {
    origin = `https://127.0.0.1:${server.address().port}`;
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
