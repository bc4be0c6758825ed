// A TLS client for tests of Herald's HTTPS server (the simulator's --tls-listen): node's own tls, http2 and crypto,
// no packages, so what it sees is what an independent client sees. One JSON object in (argv[2]), one JSON line out.
//
//   node tls-probe.js '{"mode": "h2", "port": P, "ca": "cert.pem", "requests": [{"method": "POST", "path": "/x",
//                       "headers": {"k": "v"}, "body": "…"}]}'
//
// Modes (every one connects to "host", default 127.0.0.1, and trusts only "ca" when given):
//   handshake  TLS with ALPN "alpn" (a list, default ["h2", "http/1.1"]; [] offers none): {"alpn": chosen or null,
//              "authorized", "error": the verification or connection error's code or null, "subjectaltname"}
//   h2         one HTTP/2 session, every request sent at once on it once the server's SETTINGS are in (multiplexed,
//              node queueing those over its MAX_CONCURRENT_STREAMS): {"alpn", "settings": the server's SETTINGS,
//              "responses": [{"status", "headers", "body"}] in request order}
//   raw        TLS with ALPN "alpn", then "text" written as is (HTTP/1.1 requests, pipelined if several); reads until
//              the server closes: {"alpn", "reply": everything received, as text}
//   garbage    TLS with ALPN "alpn", then "hex" written as bytes; reads until the server closes: {"alpn", "closed",
//              "received": bytes count, "goaway": whether an HTTP/2 GOAWAY frame header was among them}
//   frames     TLS with ALPN "alpn" (default ["h2"]), then "hex" written as bytes in one write (the client preface and
//              frames the test made: one TLS record, so one read for the server); reads HTTP/2 frames until every
//              event of "until" was seen ("rst:N": RST_STREAM on stream N, "end:N": a frame with END_STREAM on
//              stream N, "goaway") or the server closes: {"alpn", "closed", "frames": [{"type", "flags", "stream",
//              "code": a RST_STREAM's or GOAWAY's error code, "text": a DATA frame's payload}]}
//   plain      TCP without TLS, "text" written: {"closed", "received"}
//   cert       reads the PEM file "ca": {"subjectaltname", "ip127", "localhost", "ca": its CA flag, "curve"}
'use strict';
const tls = require('tls');
const net = require('net');
const http2 = require('http2');
const fs = require('fs');
const crypto = require('crypto');

const input = JSON.parse(process.argv[2]);
const host = input.host || '127.0.0.1';
const ca = input.ca ? fs.readFileSync(input.ca) : undefined;
const alpn = input.alpn || ['h2', 'http/1.1'];
const done = (result) => { process.stdout.write(JSON.stringify(result) + '\n'); process.exit(0); };
setTimeout(() => done({ error: 'timeout' }), 20000).unref();

function connect(onSecure) {
  const options = { host, port: input.port, ca, servername: net.isIP(host) ? '' : host };
  if (alpn.length) options.ALPNProtocols = alpn;
  const socket = tls.connect(options, () => onSecure(socket));
  return socket;
}

function readUntilClose(socket, finish) {
  const chunks = [];
  socket.on('data', (chunk) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.on('close', () => finish(Buffer.concat(chunks)));
}

/** Whether `bytes` (HTTP/2 frames after the server's) holds a frame header of type GOAWAY (7) on stream 0. */
function hasGoAway(bytes) {
  let offset = 0;
  while (offset + 9 <= bytes.length) {
    const length = bytes.readUIntBE(offset, 3);
    if (bytes[offset + 3] === 7 && (bytes.readUInt32BE(offset + 5) & 0x7fffffff) === 0) return true;
    offset += 9 + length;
  }
  return false;
}

switch (input.mode) {
  case 'handshake': {
    const socket = connect((s) => {
      const peer = s.getPeerCertificate();
      done({ alpn: s.alpnProtocol || null, authorized: s.authorized, error: s.authorizationError || null,
             subjectaltname: peer.subjectaltname || null });
    });
    socket.on('error', (error) => done({ alpn: null, authorized: false, error: error.code || error.message }));
    break;
  }
  case 'h2': {
    const session = http2.connect(`https://${net.isIPv6(host) ? `[${host}]` : host}:${input.port}`, { ca });
    session.on('error', (error) => done({ error: error.code || error.message }));
    const responses = new Array(input.requests.length);
    let left = input.requests.length;
    // The requests wait for the server's SETTINGS, as a client that honours MAX_CONCURRENT_STREAMS must (streams
    // opened past it before then may be refused); node then keeps the ones over the limit queued.
    session.once('remoteSettings', (settings) => input.requests.forEach((request, index) => {
      const headers = Object.assign({ ':method': request.method || 'GET', ':path': request.path },
                                    request.headers || {});
      const stream = session.request(headers);
      const chunks = [];
      let head = {};
      stream.on('response', (value) => { head = value; });
      stream.on('data', (chunk) => chunks.push(chunk));
      stream.on('error', (error) => { head = { ':status': 0, error: error.code || error.message }; });
      stream.on('close', () => {
        const status = head[':status'];
        const fields = Object.assign({}, head);
        delete fields[':status'];
        responses[index] = { status, headers: fields, body: Buffer.concat(chunks).toString('utf8') };
        if (--left === 0) {
          const chosen = session.alpnProtocol;
          session.close();
          done({ alpn: chosen, settings, responses });
        }
      });
      stream.end(request.body || undefined);
    }));
    break;
  }
  case 'raw': {
    const socket = connect((s) => s.write(input.text));
    readUntilClose(socket, (bytes) => done({ alpn: socket.alpnProtocol || null, reply: bytes.toString('utf8') }));
    break;
  }
  case 'garbage': {
    const socket = connect((s) => s.write(Buffer.from(input.hex, 'hex')));
    readUntilClose(socket, (bytes) => done({
      alpn: socket.alpnProtocol || null, closed: true, received: bytes.length, goaway: hasGoAway(bytes.subarray(0)),
    }));
    break;
  }
  case 'frames': {
    const options = { host, port: input.port, ca, ALPNProtocols: input.alpn || ['h2'] };
    const socket = tls.connect(options, () => socket.write(Buffer.from(input.hex, 'hex')));
    const waiting = new Set(input.until || []);
    const frames = [];
    let pending = Buffer.alloc(0);
    const finish = (closed) => done({ alpn: socket.alpnProtocol || null, closed, frames });
    // What came before the overall timeout, for the test's message.
    setTimeout(() => done({ error: 'timeout', waiting: [...waiting], frames }), 19000).unref();
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
        const length = pending.readUIntBE(0, 3);
        const frame = { type: pending[3], flags: pending[4], stream: pending.readUInt32BE(5) & 0x7fffffff };
        const payload = pending.subarray(9, 9 + length);
        if (frame.type === 3) frame.code = payload.readUInt32BE(0);
        if (frame.type === 7) frame.code = payload.readUInt32BE(4);
        if (frame.type === 0) frame.text = payload.toString('utf8');
        frames.push(frame);
        pending = pending.subarray(9 + length);
        if (frame.type === 3) waiting.delete(`rst:${frame.stream}`);
        if ((frame.type === 0 || frame.type === 1) && (frame.flags & 1)) waiting.delete(`end:${frame.stream}`);
        if (frame.type === 7) waiting.delete('goaway');
      }
      if (input.until && waiting.size === 0) finish(false);
    });
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    break;
  }
  case 'plain': {
    const socket = net.connect(input.port, host, () => socket.write(input.text));
    readUntilClose(socket, (bytes) => done({ closed: true, received: bytes.length }));
    break;
  }
  case 'cert': {
    const certificate = new crypto.X509Certificate(ca);
    done({ subjectaltname: certificate.subjectAltName, ip127: certificate.checkIP('127.0.0.1') !== undefined,
           localhost: certificate.checkHost('localhost') !== undefined, ca: certificate.ca,
           curve: certificate.publicKey.asymmetricKeyDetails.namedCurve });
    break;
  }
  default:
    done({ error: `unknown mode ${input.mode}` });
}
