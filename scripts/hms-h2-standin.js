// A stand-in for HMS Push Kit over TLS (HTTP/2, and HTTP/1.1 for a client that does not offer h2), for
// Benchmarks/hms.sh: node's built-in http2 module, no packages. It answers Huawei's OAuth token endpoint (POST
// /oauth2/v3/token, client credentials; the token has `/` in it, written `\/`) and the send API (POST
// /v1/{app_id}/messages:send: {"code":"80000000"} after a fixed delay playing the round trip to Huawei), and counts
// what arrives.
//
//   node hms-h2-standin.js --cert cert.pem --key key.pem [--delay-ms 30] [--streams 100]
//
// Prints one JSON line {"port": P, "stats_port": S} once listening (both 127.0.0.1, ephemeral). GET
// http://127.0.0.1:S/stats answers the counts:
//   sessions        TLS connections accepted
//   requests        messages:send requests received complete; tokens the device tokens in them
//   duplicates      device tokens that arrived a second time (a healthy Herald sends none)
//   bad_requests    messages:send bodies that were no HMS message (no token array of 1 to 1000, data not a string)
//   token_requests  POST /oauth2/v3/token requests; bad_auth send requests without a token it issued
//   http_versions   requests per HTTP version
// POST http://127.0.0.1:S/forget forgets the tokens seen (each drain of the benchmark sends the same backlog).
'use strict';
const http2 = require('http2');
const http = require('http');
const fs = require('fs');
const args = require('./lib-args');

const options = args.parse({ delayMs: 30, streams: 100, cert: null, key: null });
args.required(options, ['cert', 'key']);

const stats = {
    sessions: 0, requests: 0, tokens: 0, duplicates: 0, bad_requests: 0, token_requests: 0, bad_auth: 0,
    http_versions: {},
};
const seenTokens = new Set();
const issued = new Set();
const server = http2.createSecureServer({
    cert: fs.readFileSync(options.cert), key: fs.readFileSync(options.key), allowHTTP1: true,
    settings: { maxConcurrentStreams: options.streams },
});
server.on('session', (session) => {
    stats.sessions++;
    session.on('error', () => {});
});
server.on('request', (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('error', () => {});
    res.on('error', () => {});
    req.on('end', () => {
        if (req.aborted) return;
        const body = Buffer.concat(chunks).toString();
        stats.http_versions[req.httpVersion] = (stats.http_versions[req.httpVersion] || 0) + 1;
        const reply = (status, object) => {
            res.writeHead(status, { 'content-type': 'application/json;charset=UTF-8' });
            res.end(typeof object === 'string' ? object : JSON.stringify(object));
        };
        if (req.method === 'POST' && req.url === '/oauth2/v3/token') {
            stats.token_requests++;
            const form = new URLSearchParams(body);
            if (form.get('grant_type') !== 'client_credentials' || !form.get('client_id')
                || !form.get('client_secret')) {
                return reply(400, { error: 1101, sub_error: 20171, error_description: 'invalid request' });
            }
            const token = `CV/standin/${stats.token_requests}==`;
            issued.add(token);
            // As Huawei writes it: the slashes escaped, expires_in a number.
            return reply(200, `{"access_token":"${token.replace(/\//g, '\\/')}","expires_in":3600,`
                + '"token_type":"Bearer"}');
        }
        if (req.method !== 'POST' || !/^\/v1\/[0-9]+\/messages:send$/.test(req.url)) {
            return reply(404, { code: '80100001', msg: 'no such endpoint' });
        }
        const bearer = (req.headers.authorization || '').replace(/^Bearer /, '');
        if (!issued.has(bearer)) {
            stats.bad_auth++;
            return reply(401, { code: '80200001', msg: 'Oauth authentication error', requestId: '0' });
        }
        let tokens = null;
        try {
            const message = JSON.parse(body).message;
            const dataOK = message.data === undefined || typeof message.data === 'string';
            if (Array.isArray(message.token) && message.token.length >= 1 && message.token.length <= 1000 && dataOK) {
                tokens = message.token;
            }
        } catch (_) { /* counted below */ }
        if (tokens === null) {
            stats.bad_requests++;
            return reply(400, { code: '80100003', msg: 'Illegal message', requestId: '0' });
        }
        stats.requests++;
        stats.tokens += tokens.length;
        for (const token of tokens) {
            if (seenTokens.has(token)) stats.duplicates++; else seenTokens.add(token);
        }
        const id = String(stats.requests);
        setTimeout(() => {
            if (res.destroyed || res.writableEnded) return;
            reply(200, { code: '80000000', msg: 'Success', requestId: id });
        }, options.delayMs);
    });
});

const statsServer = http.createServer((req, res) => {
    req.resume();
    // A new drain sends the same backlog again: POST /forget starts its duplicate count afresh.
    if (req.method === 'POST' && req.url === '/forget') seenTokens.clear();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
});
args.listenAndAnnounce(server, statsServer);
process.on('SIGTERM', () => process.exit(0));
