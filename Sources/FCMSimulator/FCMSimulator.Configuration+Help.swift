extension FCMSimulator.Configuration {
    /// The text of `herald fcm-sim --help` and of the README's simulator section.
    public static let help = """
        Usage: herald fcm-sim --listen HOST:PORT [--tls-listen HOST:PORT] [options]

        Runs a stand-in for FCM on HOST:PORT for tests, demos and benchmarks. It speaks the legacy HTTP API
        (POST /fcm/send, JSON and plain text) and FCM HTTP v1 (POST /token, POST /v1/projects/P/messages:send),
        answers each token by its name (below), injects request-level faults at the rates you give, and counts
        everything at GET /stats. Nothing leaves the machine. With --tls-listen it also serves every route over
        HTTPS, HTTP/2 included, as Apple's APNs (POST /3/device/TOKEN) needs.
        Legacy: point Herald at it with --fcm-endpoint http://HOST:PORT/fcm/send and any --fcm-key.
        v1: start it with --service-account FILE and give Herald the same file with --fcm-service-account FILE,
        --fcm-endpoint http://HOST:PORT, and "token_uri": "http://HOST:PORT/token" (in the file or the config).

        Options:
          --listen HOST:PORT       address to listen on, e.g. 127.0.0.1:8700 (port 0 picks a free one)
          --server-key KEY         accept only "Authorization: key=KEY" (default: any non-empty key)
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
          --service-account FILE   FCM v1: a service-account key file; the token endpoint accepts only
                                   assertions signed with its key and issued by its client_email, and
                                   messages:send only its project_id (without it, every assertion is refused)
          --token-lifetime N       FCM v1: expires_in of issued access tokens, seconds (default 3600)
          --hms-app-id ID          HMS Push Kit: with --hms-client-secret-file FILE (the secret alone, whitespace
          --hms-client-secret-file FILE
                                   around it ignored), the token endpoint accepts only that client (its id the
                                   app id) and messages:send only that app id (without them: any client)
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

        Token outcomes, by prefix (the same token always gets the same answer):
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
        Examples: unavail-2-phone fails twice, then succeeds; canon-a-to-b is answered
        {"message_id":"0:...","registration_id":"b"}.

        Topics (to: /topics/NAME): ratelimit-N-... gets TopicsMessageRateExceeded N times, error-CODE-... gets
        CODE; other topics and every condition get {"message_id": <number>}.

        Whole-message errors, for every recipient: time_to_live not an integer in 0..2419200 (InvalidTtl);
        a data key from, message_type, google* or gcm* (InvalidDataKey); data and notification over 4096
        bytes of compact JSON, 2048 for topics and conditions (MessageTooBig).
        400 with a plain-text reason: unparsable JSON, no target or more than one, registration_ids empty,
        over 1000 or not strings, an option of the wrong type. 401: a missing or wrong Authorization key.
        Plain text (form-encoded, or no Content-Type): registration_id=TOKEN&data.KEY=VALUE&..., answered
        id=0:... (and registration_id=NEW on a second line), Error=CODE, or HTTP 500 for Unavailable.
        dry_run=true is answered like a real send, with message_id "fake_message_id".

        FCM v1 (POST /v1/projects/P/messages:send with "Authorization: Bearer <token from POST /token>"):
        one token, topic or condition per request, answered {"name": "projects/P/messages/N"}, or FCM v1's
        error {"error": {"code", "message", "status", "details": [{"errorCode"}]}} for the same names:
          notreg-...               404 UNREGISTERED
          invalid-...              400 INVALID_ARGUMENT naming message.token
          mismatch-...             403 SENDER_ID_MISMATCH
          badpkg-...               400 INVALID_ARGUMENT (the message)
          apns-...                 401 THIRD_PARTY_AUTH_ERROR
          unavail-N-... / internal-N-... / ratelimit-N-...
                                   503 UNAVAILABLE / 500 INTERNAL / 429 QUOTA_EXCEEDED N times, then delivered
          canon-OLD-to-NEW         delivered (v1 has no canonical ids)
          error-CODE-...           CODE as a v1 errorCode (legacy names are translated, unknown ones are 500)
        A missing, unknown or expired access token gets 401 UNAUTHENTICATED; another project than the service
        account's gets 403 PERMISSION_DENIED; an invalid body (several targets, non-string data values, a bad
        android.ttl) gets 400 INVALID_ARGUMENT. Faults apply as for legacy sends: --unauthorized-rate gives 401
        UNAUTHENTICATED, --fail-status 429 gives QUOTA_EXCEEDED, 503 UNAVAILABLE, 500 INTERNAL.
        The token endpoint (POST /token, form grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT)
        checks the RS256 signature, iss (client_email), aud (http://HOST:PORT/token as requested), scope
        (firebase.messaging) and iat/exp (at most an hour), and answers {"access_token", "expires_in",
        "token_type": "Bearer"} or 400 {"error": "invalid_grant", "error_description": ...} in Google's words.

        Control (JSON to POST /control; a queued fault comes before any drawn at a rate):
          {"fail_next": 2, "status": 503, "retry_after": "2"}   next 2 sends get 503, Retry-After: 2
          {"fail_next": 1, "retry_after_date": true}             ... with Retry-After as an HTTP-date
          {"unauthorized_next": 1}                               next send gets 401
          {"slow_next": 1, "slow_ms": 500}                       next reply comes 500 ms late
          {"drop_next": 1}                                       next send is dropped
          {"fail_rate": 0.1}                                     also unauthorized_rate, slow_rate, drop_rate
          {"token_fail_next": 1}                                 next token request gets 503
          {"token_refuse_next": 1}                               next token request gets 400 invalid_grant
          {"revoke_tokens": true}                                forget every access token issued (v1 sends
                                                                 then get 401 UNAUTHENTICATED)
          {"reset": true}                                        clear counters, token sightings and faults
                                                                 back to the flags' settings (issued access
                                                                 tokens stay valid)
        retry_after takes seconds (2 or "2"), any other header text verbatim, or null for none.
        The answer is the fault settings now in force.

        Stats (GET /stats, ?requests=N for only the last N requests): total_requests, statuses (requests
        per HTTP status), tokens_received, topic_messages, condition_messages, outcomes (delivered,
        canonical, or the error code, per recipient), faults, oauth (token_requests, tokens_issued, refused,
        failed), the seed, and requests: up to the last 10000 sends in arrival order, each {"at": <unix ms>,
        "tokens": [...], "to"|"topic"|"condition", "time_to_live", "collapse_key", "priority", "dry_run",
        "format": "json"|"plain"|"v1", "status", "http": "HTTP/1.1"|"HTTP/2"} (v1: time_to_live from android.ttl,
        validate_only as dry_run; APNs requests are listed as v1).

        APNs (POST /3/device/TOKEN, over --tls-listen as Apple's is over TLS): the provider token (authorization:
        bearer JWT) must be ES256 with the APNs key herald serve --sandbox gives the simulator it starts; any
        other is answered 403 {"reason": "InvalidProviderToken"}. Then apns-topic (400 MissingTopic) and a body
        with aps (400 PayloadEmpty) are checked, and the token prefixes above answer in Apple's words: notreg- 410
        Unregistered with a timestamp, apns- 403 InvalidProviderToken, ratelimit-N- 429 TooManyRequests,
        unavail-N- and internal-N- 503 ServiceUnavailable, invalid- and the rest of the errors 400
        BadDeviceToken; delivered is 200 with the request's apns-id. /stats lists each request with its
        protocol ("http": "HTTP/2" or "HTTP/1.1").

        Web Push (POST /push/ID, a push service as browsers' are): the VAPID header (vapid t=JWT, k=KEY: ES256
        signed by KEY, an https aud, exp within 24 hours, a sub) or 403; a TTL header and Content-Encoding:
        aes128gcm or 400; a body of 4096 bytes at most or 413. Then ID's prefix answers as for tokens: notreg-
        410, invalid- and the other errors 404, apns- 403, ratelimit-N- 429, unavail-N- and internal-N- 503 (with
        Retry-After: 1); anything else 201 with a Location. POST /webpush/subscriptions {"name": "phone",
        "origin": "https://HOST:PORT"} makes a subscription as a browser would (PushSubscription.toJSON() plus
        its private_key); what arrives for it is decrypted (a body that does not decrypt is 400), and /stats shows
        each push's ttl, urgency, topic, body and decrypted payload under "message".

        HMS Push Kit (POST /oauth2/v3/token, form grant_type=client_credentials&client_id&client_secret; then
        POST /v1/APP_ID/messages:send with the access token): Huawei's checks of the body (one target, 1 to 1000
        tokens, 4096 bytes without them, data a string, collapse_key -1 to 100, ttl, click_action) with its
        codes, then per token: notreg- and illegal- refused (80100000 naming them, or 80300007 when all are),
        unavail-N- HTTP 503 N times, internal-N- 81000001 N times, the rest 80000000. POST /hms/control
        {"expire_tokens": true} makes issued access tokens expired (80200003); GET /hms/stats counts.

        Example:
          herald fcm-sim --listen 127.0.0.1:8700 --fail-rate 0.01 --retry-after 2 --seed 7
          curl -s http://127.0.0.1:8700/fcm/send -H 'Authorization: key=any' \\
            -H 'Content-Type: application/json' -d '{"registration_ids": ["ok-1", "unavail-1-a", "notreg-b"]}'
          herald fcm-sim --listen 127.0.0.1:8700 --tls-listen 127.0.0.1:8743 --tls-cert-out sim.pem
          curl -s --cacert sim.pem https://127.0.0.1:8743/stats
        """
}
