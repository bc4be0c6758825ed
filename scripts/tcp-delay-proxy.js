// A TCP proxy that plays a network's latency, for Benchmarks/postgres.sh: node's built-in modules, no packages. Every
// connection accepted is forwarded byte for byte, both ways, to --target, each chunk held --delay-ms milliseconds
// before it is passed on (in order, whatever its size), so a request and its answer cross it in twice that: a
// database "a round trip away" on another host or in another zone, where loopback answers in a tenth of a
// millisecond. Bandwidth is not limited.
//
//   node tcp-delay-proxy.js --target HOST:PORT --delay-ms 1
//
// Prints one JSON line {"port": P} once listening (127.0.0.1, ephemeral); runs until SIGTERM. Timers fire late by
// the event loop's lag, so the round trip it really gives is a little more than twice the delay: the benchmark
// measures it (sequential `SELECT 1` through it) and prints that.
'use strict';
const net = require('net');
const args = require('./lib-args');

const options = args.parse({ target: null, delayMs: 1 });
const target = args.target(options.target);
const delayNs = BigInt(Math.round(options.delayMs * 1e6));
if (!(delayNs >= 0n)) args.refuse('--delay-ms must be a number of milliseconds');
// A timer may fire a little before its time (libuv counts from the loop's cached clock): chunks due within this
// much go then, rather than after another whole millisecond.
const EARLY_NS = 300000n;
// Bytes held for one direction beyond which its sender is paused until they have gone.
const HIGH_WATER = 4 * 1024 * 1024;

// Passes `from`'s bytes to `to`, each chunk when it has been held for the delay. One timer per direction, set for
// the oldest chunk held: chunks arrive in order and are held alike, so they leave in order.
const forward = (from, to) => {
    const held = [];
    let bytes = 0;
    let timer = null;
    let ended = false;
    const release = () => {
        timer = null;
        const now = process.hrtime.bigint() + EARLY_NS;
        while (held.length > 0 && held[0].due <= now) {
            const { chunk } = held.shift();
            bytes -= chunk.length;
            to.write(chunk);
        }
        if (bytes < HIGH_WATER && from.isPaused()) from.resume();
        if (held.length > 0) schedule();
        else if (ended) to.end();
    };
    // Node's timers count whole milliseconds (a shorter wait is cut down, then fires early): round up.
    const schedule = () => {
        const wait = Number(held[0].due - process.hrtime.bigint()) / 1e6;
        timer = setTimeout(release, Math.max(0, Math.ceil(wait)));
    };
    from.on('data', (chunk) => {
        held.push({ chunk, due: process.hrtime.bigint() + delayNs });
        bytes += chunk.length;
        if (bytes >= HIGH_WATER) from.pause();
        if (timer === null) schedule();
    });
    from.on('end', () => {
        ended = true;
        if (held.length === 0) to.end();
    });
};

const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    forward(client, upstream);
    forward(upstream, client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
});

server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => process.exit(0));
