// A TCP proxy in front of PostgreSQL that can lose the answer to a COMMIT, for the tests of PGWriter
// (Tests/PostgreSQLTests/PGWriterTests.swift): once armed, the next CommandComplete "COMMIT" the server sends is
// not passed on; both sides of that connection are closed instead. The transaction is committed; the client only
// never hears it. Clients must connect with sslmode=disable and gssencmode=disable (the proxy reads the server's
// messages from the first byte on).
//
//   node pg-commit-dropper.js --upstream-port PORT --state FILE
//
// Prints one JSON line {"port": P} once listening (127.0.0.1, ephemeral). SIGUSR1 arms it. FILE always holds
// {"armed": BOOL, "dropped": N}, rewritten whenever either changes.
const net = require('net');
const fs = require('fs');

let upstreamPort = 0;
let stateFile = null;
for (let i = 2; i < process.argv.length; i += 2) {
    if (process.argv[i] === '--upstream-port') upstreamPort = Number(process.argv[i + 1]);
    else if (process.argv[i] === '--state') stateFile = process.argv[i + 1];
    else { console.error(`unknown option ${process.argv[i]}`); process.exit(2); }
}
let armed = false;
let dropped = 0;
// Written aside and renamed, so a reader never sees half of it.
const save = () => {
    fs.writeFileSync(stateFile + '.new', JSON.stringify({ armed, dropped }));
    fs.renameSync(stateFile + '.new', stateFile);
};
save();
process.on('SIGUSR1', () => { armed = true; save(); });

const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, '127.0.0.1');
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (chunk) => upstream.write(chunk));
    let buffered = Buffer.alloc(0);
    upstream.on('data', (chunk) => {
        buffered = Buffer.concat([buffered, chunk]);
        // Backend messages: a type byte, then an int32 length that counts itself and the payload.
        let end = 0;
        while (buffered.length - end >= 5) {
            const length = buffered.readUInt32BE(end + 1);
            if (buffered.length - end < 1 + length) break;
            const type = String.fromCharCode(buffered[end]);
            const payload = buffered.subarray(end + 5, end + 1 + length);
            if (armed && type === 'C' && payload.toString('latin1').startsWith('COMMIT\0')) {
                armed = false;
                dropped++;
                save();
                if (end > 0) client.write(buffered.subarray(0, end));
                client.destroy();
                upstream.destroy();
                return;
            }
            end += 1 + length;
        }
        if (end > 0) client.write(buffered.subarray(0, end));
        buffered = buffered.subarray(end);
    });
});

server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => process.exit(0));
