import FCMSimulator

extension FCMV1Simulator {
    public static let help = SimulatorHelp(
        intro: """
            FCM HTTP v1 (POST /token, POST /v1/projects/P/messages:send): start it with --service-account FILE and
            give Herald the same file with --fcm-service-account FILE, --fcm-endpoint http://HOST:PORT, and
            "token_uri": "http://HOST:PORT/token" (in the file or the config).
            """,
        flags: ["--service-account", "--token-lifetime"],
        options: """
              --service-account FILE   FCM v1: a service-account key file; the token endpoint accepts only
                                       assertions signed with its key and issued by its client_email, and
                                       messages:send only its project_id (without it, every assertion is refused)
              --token-lifetime N       FCM v1: expires_in of issued access tokens, seconds (default 3600)
            """,
        section: """
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
            """,
        control: """
              {"token_fail_next": 1}                                 next token request gets 503
              {"token_refuse_next": 1}                               next token request gets 400 invalid_grant
              {"revoke_tokens": true}                                forget every access token issued (v1 sends
                                                                     then get 401 UNAUTHENTICATED; a reset keeps
                                                                     them valid)
            """,
        stats: """
            FCM v1 adds oauth (token_requests, tokens_issued, refused, failed); its sends are listed as "v1", with
            time_to_live from android.ttl and validate_only as dry_run.
            """)
}
