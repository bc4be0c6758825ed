// Hostile push services (SPEC §19) over TLS + HTTP/2, for Benchmarks/hostile-push.sh and tests: node's built-in
// http2 module, no packages. Each behaviour listens on a port of its own, so each is an origin of its own, as a
// stranger's push service would be:
//   forbidden  403 to every request (a push service refusing the VAPID key)
//   toomany    429 with Retry-After: 86400 (a day)
//   bad        400 (refuses the message)
//   hang       reads the request and never answers
//   huge       201 with an 8 MiB body (and a Location)
//
//   node hostile-push-standin.js --cert cert.pem --key key.pem [--modes forbidden,toomany,bad,hang,huge]
//
// Prints one JSON line {"port": <the first mode's port>, mode: port, …, "stats_port": S} once listening (all
// 127.0.0.1, ephemeral).
// GET http://127.0.0.1:S/stats answers {"requests": {mode: n}, "sessions": {mode: n}}.
'use strict';
const http2 = require('http2');
const http = require('http');
const fs = require('fs');
const args = require('./lib-args');

const options = args.parse({ cert: null, key: null, modes: 'forbidden,toomany,bad,hang,huge' });
args.required(options, ['cert', 'key']);

const huge = Buffer.alloc(8 << 20, 0x61);
const behaviours = {
    forbidden: (stream) => stream.respond({ ':status': 403 }, { endStream: true }),
    toomany: (stream) => stream.respond({ ':status': 429, 'retry-after': '86400' }, { endStream: true }),
    bad: (stream) => stream.respond({ ':status': 400 }, { endStream: true }),
    hang: () => {},
    huge: (stream) => {
        stream.respond({ ':status': 201, 'location': 'https://push.invalid/m/1', 'content-length': huge.length });
        stream.end(huge);
    },
};

const modes = options.modes.split(',').filter((mode) => mode);
for (const mode of modes) {
    if (!(mode in behaviours)) { console.error(`unknown mode ${mode}`); process.exit(2); }
}
const stats = { requests: {}, sessions: {} };
const ports = {};
const tls = { cert: fs.readFileSync(options.cert), key: fs.readFileSync(options.key) };

function listen(server) {
    return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

(async () => {
    for (const mode of modes) {
        stats.requests[mode] = 0;
        stats.sessions[mode] = 0;
        const server = http2.createSecureServer({ ...tls, allowHTTP1: false, settings: { maxConcurrentStreams: 100 } });
        server.on('session', (session) => {
            stats.sessions[mode]++;
            session.on('error', () => {});
        });
        server.on('stream', (stream) => {
            stream.on('error', () => {});
            stream.on('data', () => {});
            stream.on('end', () => {
                stats.requests[mode]++;
                behaviours[mode](stream);
            });
        });
        ports[mode] = await listen(server);
    }
    const statsServer = http.createServer((request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify(stats));
    });
    const statsPort = await listen(statsServer);
    console.log(JSON.stringify({ port: ports[modes[0]], ...ports, stats_port: statsPort }));
})();
