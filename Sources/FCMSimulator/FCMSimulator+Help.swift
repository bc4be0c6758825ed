extension FCMSimulator {
    /// The text of `herald fcm-sim --help` with `sides`' parts (`SimulatorSide.help`) in their places, in their order.
    public static func help(sides: [any SimulatorSide.Type]) -> String {
        let parts = sides.map { $0.help }
        func joined(_ part: (SimulatorHelp) -> String, separator: String = "\n") -> String {
            parts.map(part).filter { !$0.isEmpty }.joined(separator: separator)
        }
        return """
            Usage: herald fcm-sim --listen HOST:PORT [--tls-listen HOST:PORT] [options]

            Runs stand-ins for the push services Herald sends to on HOST:PORT, for tests, demos and benchmarks: each
            provider's side answers a token by its name (below), request-level faults come at the rates you give,
            and GET /stats counts everything. Nothing leaves the machine. With --tls-listen it also serves every
            route over HTTPS, HTTP/2 included, as Apple's APNs and the browsers' push services speak.
            \(joined(\.intro))

            Options:
              --listen HOST:PORT       address to listen on, e.g. 127.0.0.1:8700 (port 0 picks a free one)
              --fail-rate R            answer this fraction (0 to 1) of sends with a server error (default 0)
              --fail-status CODE       status of those errors, 429 or 500 to 599 (default 503)
              --retry-after N          send "Retry-After: N" (seconds) with those errors (default: no header)
              --retry-after-date       send Retry-After as an HTTP-date N seconds ahead instead (N from
                                       --retry-after, default 1)
              --unauthorized-rate R    answer this fraction of sends with 401, whatever the key
              --slow-rate R            delay this fraction of replies by --slow-ms
              --slow-ms N              the delay in milliseconds, 0 to 600000 (default 1000)
              --drop-rate R            drop this fraction of sends (for now answered with an empty 500: the
                                       server cannot yet close a connection without a reply)
              --alias TOKEN=BEHAVIOUR  answer TOKEN as if it were the token BEHAVIOUR (repeatable), so tests can
                                       use any token: --alias 42=notreg-42 --alias 23=canon-23-to-32
              --seed N                 seed of the fault draws, to repeat a run (default: random; /stats shows it)
            \(joined(\.options))
              --help                   show this text

            HTTPS (beside --listen, which stays cleartext):
              --tls-listen HOST:PORT   also serve everything over TLS on HOST:PORT (port 0 picks a free one): HTTP/2
                                       when the client's ALPN offers h2, else HTTP/1.1. The "fcm-sim listening" log
                                       line gives the bound address as tls_address and https_endpoint
              --tls-cert FILE          the certificate (PEM, chain after it) to serve, with --tls-key FILE, its
              --tls-key FILE           unencrypted private key (default: a throw-away P-256 key and a self-signed
                                       certificate for 127.0.0.1, ::1 and localhost, made at start)
              --tls-cert-out FILE      write the certificate served (PEM) to FILE for clients to trust: Herald
                                       through SSL_CERT_FILE=FILE, curl --cacert FILE, node's ca option
              --max-concurrent-streams N
                                       SETTINGS_MAX_CONCURRENT_STREAMS of each HTTP/2 connection, 1 to 1048576
                                       (default 1000)

            Token outcomes, by prefix (the same token always gets the same answer), in FCM legacy's codes; each
            side below answers them in its own words:
              notreg-...               NotRegistered
              invalid-...              InvalidRegistration
              mismatch-...             MismatchSenderId
              badpkg-...               InvalidPackageName
              apns-...                 InvalidApnsCredential
              unavail-N-...            Unavailable the first N times this exact token is seen, then delivered
              internal-N-...           InternalServerError N times, then delivered
              ratelimit-N-...          DeviceMessageRateExceeded N times, then delivered
              canon-OLD-to-NEW         delivered, with canonical registration_id NEW
              error-CODE-...           CODE every time, any text without "-" (e.g. error-QuotaExceeded-1)
              "" (empty)               MissingRegistration
              anything else            delivered (so is a name that starts like a rule but breaks it,
                                       e.g. unavail-x-1)

            \(joined(\.section, separator: "\n\n"))

            Control (JSON to POST /control; a queued fault comes before any drawn at a rate):
              {"fail_next": 2, "status": 503, "retry_after": "2"}   next 2 sends get 503, Retry-After: 2
              {"fail_next": 1, "retry_after_date": true}             ... with Retry-After as an HTTP-date
              {"unauthorized_next": 1}                               next send gets 401
              {"slow_next": 1, "slow_ms": 500}                       next reply comes 500 ms late
              {"drop_next": 1}                                       next send is dropped
              {"fail_rate": 0.1}                                     also unauthorized_rate, slow_rate, drop_rate
            \(joined(\.control))
              {"reset": true}                                        clear counters, token sightings and faults
                                                                     back to the flags' settings
            retry_after takes seconds (2 or "2"), any other header text verbatim, or null for none.
            The answer is the fault settings now in force.

            Stats (GET /stats, ?requests=N for only the last N requests): total_requests, statuses (requests
            per HTTP status), tokens_received, topic_messages, condition_messages, outcomes (delivered,
            canonical, or the error code, per recipient), faults, the seed, and requests: up to the last 10000
            sends in arrival order, each {"at": <unix ms>, "tokens": [...], "to"|"topic"|"condition",
            "time_to_live", "collapse_key", "priority", "dry_run", "format": "json"|"plain"|"v1", "status",
            "http": "HTTP/1.1"|"HTTP/2"}.
            \(joined(\.stats))

            Example:
              herald fcm-sim --listen 127.0.0.1:8700 --fail-rate 0.01 --retry-after 2 --seed 7
              curl -s http://127.0.0.1:8700/fcm/send -H 'Authorization: key=any' \\
                -H 'Content-Type: application/json' -d '{"registration_ids": ["ok-1", "unavail-1-a", "notreg-b"]}'
              herald fcm-sim --listen 127.0.0.1:8700 --tls-listen 127.0.0.1:8743 --tls-cert-out sim.pem
              curl -s --cacert sim.pem https://127.0.0.1:8743/stats
            """
    }
}
