// The command line of the node scripts here (node's built-in modules, no packages): `--name value` pairs in, and for
// the stand-ins the line that says where they listen out. What it refuses ends the process with status 2, the reason
// on stderr.
'use strict';

const refuse = (message) => {
    console.error(message);
    process.exit(2);
};

// `defaults` with the values of process.argv's `--kebab-name value` pairs over them, each under its camelCase name
// (`--delay-ms 5` sets delayMs) and a number where its default is one; a name `defaults` does not hold is refused.
const parse = (defaults) => {
    const options = { ...defaults };
    for (let i = 2; i < process.argv.length; i += 2) {
        const name = process.argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
        const value = process.argv[i + 1];
        if (!(name in options)) refuse(`unknown option ${process.argv[i]}`);
        options[name] = typeof options[name] === 'number' ? Number(value) : value;
    }
    return options;
};

// Refuses the options without a value among `names` (camelCase, as parse's).
const required = (options, names) => {
    for (const name of names) {
        if (!options[name]) refuse(`--${name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())} is required`);
    }
};

// `--target HOST:PORT` as { host, port } (an IPv6 address without its brackets); refused when it is not that.
const target = (value) => {
    const match = /^(.+):(\d+)$/.exec(value || '');
    if (!match) refuse('--target HOST:PORT is required');
    return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) };
};

// Listens `server` and `statsServer` on loopback ports the kernel picks, calls `ready` (if given) once `server`
// listens, then prints {"port", "stats_port"}: the line Benchmarks/common.sh and the tests read.
const listenAndAnnounce = (server, statsServer, ready) => {
    server.listen(0, '127.0.0.1', () => {
        if (ready) ready();
        statsServer.listen(0, '127.0.0.1', () => {
            console.log(JSON.stringify({ port: server.address().port, stats_port: statsServer.address().port }));
        });
    });
};

module.exports = { listenAndAnnounce, parse, refuse, required, target };
