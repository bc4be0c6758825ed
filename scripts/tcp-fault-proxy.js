// A TCP proxy that breaks the connections through it on command, for tests and Benchmarks/netfault.sh: node's
// built-in modules, no packages. Every connection accepted is forwarded byte for byte, both ways, to --target (TLS
// passes through untouched: the client checks the target's certificate, for the address it dialled). A control
// server plays the network faults that SPEC §11 asks Herald to survive in seconds:
//
//   node tcp-fault-proxy.js --target HOST:PORT
//
// Prints one JSON line {"port": P, "control_port": C} once listening (both 127.0.0.1, ephemeral). On C, HTTP:
//   POST /reset   every connection open now is reset at once: the client's side gets an RST (it reads
//                 ECONNRESET), the target's side is closed. What a load balancer's restart or a NAT flush does.
//                 Answers {"reset": N}.
//   POST /freeze  every connection open now goes silent: nothing more is forwarded either way (what either side
//                 sends is read and dropped), and neither side is closed or told: a dead NAT entry, a half-open
//                 path. Frozen connections stay so until a side closes or a /reset. Answers {"frozen": N}.
//   GET /stats    {"accepted", "open", "reset", "frozen", "bytes_up", "bytes_down"}: connections accepted in
//                 all, open now (frozen ones included), reset and frozen in all; bytes forwarded client -> target
//                 and target -> client.
// Connections accepted after a fault are forwarded normally.
'use strict';
const net = require('net');
const http = require('http');
const args = require('./lib-args');

const target = args.target(args.parse({ target: null }).target);

const stats = { accepted: 0, open: 0, reset: 0, frozen: 0, bytes_up: 0, bytes_down: 0 };
// Every open connection: { client, upstream, frozen }.
const connections = new Set();

// Forwards `from`'s bytes to `to` while the connection is not frozen, with back-pressure; once frozen, reads and
// drops them, so the sender's writes go on succeeding and nothing answers.
const forward = (connection, from, to, counter) => {
    from.on('data', (chunk) => {
        if (connection.frozen) return;
        stats[counter] += chunk.length;
        if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => from.resume());
    // A side that finishes its writing: the other is told, unless the path is dead (then that side is let go, and
    // the other hears nothing).
    from.on('end', () => { if (connection.frozen) from.destroy(); else to.end(); });
};

const server = net.createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    stats.accepted++;
    stats.open++;
    const upstream = net.connect({ host: target.host, port: target.port, noDelay: true, allowHalfOpen: true });
    const connection = { client, upstream, frozen: false };
    connections.add(connection);
    forward(connection, client, upstream, 'bytes_up');
    forward(connection, upstream, client, 'bytes_down');
    let closed = false;
    const close = () => {
        if (closed) return;
        closed = true;
        connections.delete(connection);
        stats.open--;
    };
    client.on('error', () => upstream.destroy());
    client.on('close', () => {
        upstream.destroy();
        close();
    });
    // The target failing or closing is passed on as a reset (a refused or broken connection), unless frozen.
    upstream.on('error', () => { if (!connection.frozen) client.resetAndDestroy(); });
    upstream.on('close', () => { if (!connection.frozen && !client.destroyed) client.end(); });
});

const reset = () => {
    const affected = [...connections];
    for (const connection of affected) {
        connection.frozen = true; // nothing more is forwarded while the two sides go
        connection.client.resetAndDestroy();
        connection.upstream.destroy();
    }
    stats.reset += affected.length;
    return affected.length;
};

const freeze = () => {
    let count = 0;
    for (const connection of connections) {
        if (connection.frozen) continue;
        connection.frozen = true;
        // Writes already handed to a socket still go out; a paused reader is resumed, to read and drop.
        connection.client.resume();
        connection.upstream.resume();
        count++;
    }
    stats.frozen += count;
    return count;
};

const control = http.createServer((req, res) => {
    req.resume();
    const answer = (status, body) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && req.url === '/reset') return answer(200, { reset: reset() });
    if (req.method === 'POST' && req.url === '/freeze') return answer(200, { frozen: freeze() });
    if (req.url === '/stats') return answer(200, stats); // any method: a test's client may only POST
    answer(404, { error: 'POST /reset, POST /freeze or GET /stats' });
});

server.listen(0, '127.0.0.1', () => {
    control.listen(0, '127.0.0.1', () => {
        console.log(JSON.stringify({ port: server.address().port, control_port: control.address().port }));
    });
});
process.on('SIGTERM', () => process.exit(0));
