// A TLS server that speaks just enough HTTP/2 to break its rules on purpose, for the tests of Herald's own HTTP/2
// client (Tests/SendTests/HTTP2ProtocolErrorTests.swift). It reads the client's preface and frames, sends its
// SETTINGS, and once the client's first request (HEADERS) has arrived sends the frame that --mode names instead
// of an answer. Every frame the client sends is recorded.
//
//   node h2-misbehaving-server.js --cert cert.pem --key key.pem --mode MODE
//
// MODE: data-on-stream-0, ping-of-7-bytes, push-promise, oversized-frame, bad-hpack, headers-on-idle-stream,
// window-overflow, interrupted-header-block, rst-refused (REFUSED_STREAM for the first request, then a 200 for
// every request: a well-behaved one), ping (a PING, then a 200), late-settings (its SETTINGS only after 300 ms,
// allowing 2 concurrent streams; every request answered 200 after 100 ms), no-settings (never sends SETTINGS),
// silent (after its SETTINGS nothing more: no answer, no PING ACK — a dead path), first-unanswered (the first
// request of each connection is never answered, every later one is; PINGs are acknowledged), answers-then-ping-flood
// (once 5 requests are open: 970 PINGs, answers to the first 3, then 100 PINGs more, in one write — the client's
// nghttp2 finds the flood, over its 1000 unsent PING ACKs, in the same read as the answers; the last 2 requests are
// never answered), oversized-headers (the first request of each connection is answered with 80 KiB of header fields
// in a HEADERS and CONTINUATION frames; every later one with a 200).
// In every mode but silent the client's PINGs are acknowledged.
//
// Prints one JSON line {"port": P, "stats_port": S} once listening (both 127.0.0.1, ephemeral). GET
// http://127.0.0.1:S/stats answers {"sessions": N, "requests": N, "frames": [{"type", "flags", "stream", "code"}],
// "early": N, "max_open": N} (code: a GOAWAY's or RST_STREAM's error code; for a PING its payload's first byte;
// early: requests that arrived before the server's SETTINGS; max_open: the most requests open at once on one
// connection).
const tls = require('tls');
const http = require('http');
const fs = require('fs');
const args = require('./lib-args');

const options = args.parse({ cert: null, key: null, mode: 'data-on-stream-0' });
const stats = { sessions: 0, requests: 0, frames: [], early: 0, max_open: 0 };

const frame = (type, flags, stream, payload) => {
    const header = Buffer.alloc(9);
    header.writeUIntBE(payload.length, 0, 3);
    header[3] = type;
    header[4] = flags;
    header.writeUInt32BE(stream, 5);
    return Buffer.concat([header, payload]);
};
const u32 = (value) => { const b = Buffer.alloc(4); b.writeUInt32BE(value); return b; };
// An HPACK integer with a 7-bit prefix (RFC 7541 section 5.1), and a literal field without indexing, new name.
const hpackInteger = (value) => {
    if (value < 127) return [value];
    const bytes = [127];
    for (value -= 127; value >= 128; value >>= 7) bytes.push((value & 0x7f) | 0x80);
    bytes.push(value);
    return bytes;
};
const literal = (name, value) => Buffer.concat([
    Buffer.from([0x00, ...hpackInteger(name.length)]), Buffer.from(name),
    Buffer.from(hpackInteger(value.length)), Buffer.from(value),
]);
const pings = (count) => Buffer.concat(Array.from({ length: count }, () => frame(6, 0, 0, Buffer.alloc(8))));
// :status 200 and 80 fields of 1 KiB, in a HEADERS frame (END_STREAM) and CONTINUATION frames of 16 KiB at most.
const oversizedHeaders = (stream) => {
    const block = Buffer.concat([Buffer.from([0x88]),
        ...Array.from({ length: 80 }, (_, i) => literal(`x-pad-${i}`, 'a'.repeat(1024)))]);
    const frames = [];
    for (let offset = 0; offset < block.length; offset += 16384) {
        const last = offset + 16384 >= block.length;
        const type = offset === 0 ? 1 : 9;
        const flags = (offset === 0 ? 0x1 : 0) | (last ? 0x4 : 0);
        frames.push(frame(type, flags, stream, block.subarray(offset, offset + 16384)));
    }
    return Buffer.concat(frames);
};
// :status 200 (static index 8), then a literal content-length: 2 without indexing, and the body "{}".
const answer = (stream) => Buffer.concat([
    frame(1, 0x4, stream, Buffer.from([0x88, 0x0f, 0x0d, 0x01, 0x32])),
    frame(0, 0x1, stream, Buffer.from('{}')),
]);

const server = tls.createServer({
    cert: fs.readFileSync(options.cert), key: fs.readFileSync(options.key), ALPNProtocols: ['h2'],
}, (socket) => {
    stats.sessions++;
    let buffered = Buffer.alloc(0);
    let prefaceSeen = false;
    let requests = 0;
    let settingsSent = false;
    socket.open = 0;
    socket.streams = [];
    socket.on('error', () => {});
    let ackOwed = false;
    if (options.mode === 'late-settings') {
        // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 2; the acknowledgement of the client's SETTINGS after them.
        setTimeout(() => {
            settingsSent = true;
            socket.write(frame(4, 0, 0, Buffer.from([0, 3, 0, 0, 0, 2])));
            if (ackOwed) socket.write(frame(4, 1, 0, Buffer.alloc(0)));
        }, 300);
    } else if (options.mode !== 'no-settings') {
        settingsSent = true;
        socket.write(frame(4, 0, 0, Buffer.alloc(0)));
    }
    socket.on('data', (chunk) => {
        buffered = Buffer.concat([buffered, chunk]);
        if (!prefaceSeen) {
            if (buffered.length < 24) return;
            buffered = buffered.subarray(24);
            prefaceSeen = true;
        }
        while (buffered.length >= 9) {
            const length = buffered.readUIntBE(0, 3);
            if (buffered.length < 9 + length) break;
            const type = buffered[3];
            const flags = buffered[4];
            const stream = buffered.readUInt32BE(5) & 0x7fffffff;
            const payload = buffered.subarray(9, 9 + length);
            buffered = buffered.subarray(9 + length);
            const code = type === 7 ? payload.readUInt32BE(4) : type === 3 ? payload.readUInt32BE(0)
                : type === 6 ? payload[0] : null;
            stats.frames.push({ type, flags, stream, code });
            if (socket.silenced) continue;
            if (type === 6 && !(flags & 1) && options.mode !== 'silent') socket.write(frame(6, 1, 0, payload));
            if (type === 4 && !(flags & 1)) {
                if (settingsSent) socket.write(frame(4, 1, 0, Buffer.alloc(0))); else ackOwed = true;
            }
            if (type === 1) {
                requests++;
                stats.requests++;
                if (!settingsSent) stats.early++;
                socket.open++;
                stats.max_open = Math.max(stats.max_open, socket.open);
                misbehave(socket, stream, requests);
            }
        }
    });
});

function misbehave(socket, stream, requests) {
    switch (options.mode) {
    case 'data-on-stream-0': return socket.write(frame(0, 0, 0, Buffer.from('x')));
    case 'ping-of-7-bytes': return socket.write(frame(6, 0, 0, Buffer.alloc(7)));
    case 'push-promise': return socket.write(frame(5, 0x4, stream, Buffer.concat([u32(2), Buffer.from([0x82])])));
    case 'oversized-frame': return socket.write(frame(0, 0, stream, Buffer.alloc(16385)));
    case 'bad-hpack': return socket.write(frame(1, 0x4, stream, Buffer.from([0xbe])));
    case 'headers-on-idle-stream': return socket.write(frame(1, 0x4, stream + 2, Buffer.from([0x88])));
    case 'window-overflow': return socket.write(frame(8, 0, 0, u32(0x7fffffff)));
    case 'interrupted-header-block':
        return socket.write(Buffer.concat([frame(1, 0, stream, Buffer.from([0x88])), frame(6, 0, 0, Buffer.alloc(8))]));
    case 'rst-refused':
        return socket.write(requests === 1 ? frame(3, 0, stream, u32(7)) : answer(stream));
    case 'ping':
        return socket.write(Buffer.concat([frame(6, 0, 0, Buffer.from([42, 0, 0, 0, 0, 0, 0, 0])), answer(stream)]));
    case 'silent': socket.silenced = true; return undefined;
    case 'first-unanswered': return requests === 1 ? undefined : socket.write(answer(stream));
    case 'late-settings':
        return setTimeout(() => { socket.open--; socket.write(answer(stream)); }, 100);
    case 'answers-then-ping-flood':
        socket.streams.push(stream);
        if (socket.streams.length !== 5) return undefined;
        return socket.write(Buffer.concat([pings(970), ...socket.streams.slice(0, 3).map(answer), pings(100)]));
    case 'oversized-headers': return socket.write(requests === 1 ? oversizedHeaders(stream) : answer(stream));
    default:
        console.error(`unknown mode ${options.mode}`);
        process.exit(2);
    }
}

const statsServer = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(stats));
});

args.listenAndAnnounce(server, statsServer);
process.on('SIGTERM', () => process.exit(0));
