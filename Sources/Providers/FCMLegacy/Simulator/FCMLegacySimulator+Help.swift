import FCMSimulator

extension FCMLegacySimulator {
    public static let help = SimulatorHelp(
        intro: """
            FCM legacy (POST /fcm/send, JSON and plain text): point Herald at it with --fcm-endpoint
            http://HOST:PORT/fcm/send and any --fcm-key.
            """,
        flags: ["--server-key"],
        options: """
              --server-key KEY         FCM legacy: accept only "Authorization: key=KEY" (default: any non-empty key)
            """,
        section: """
            FCM legacy (POST /fcm/send): the token outcomes above, and the request-level faults. Examples:
            unavail-2-phone fails twice, then succeeds; canon-a-to-b is answered
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
            """)
}
