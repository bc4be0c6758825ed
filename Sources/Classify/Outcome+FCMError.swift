import Support

// MARK: - FCM error codes

extension Outcome {
    /// The outcome for an FCM error code found in a result, a topic reply or an `Error=` line (SPEC §6).
    ///
    /// Codes match exactly, as FCM spells them. An unknown code is retried (and ends as `MaxAttempts` if it never
    /// clears); its reason is the code itself when it looks like an identifier, else `UnknownError`, so a hostile
    /// reply cannot put arbitrary text into the database or the CLI's tables.
    init(fcmError code: String) {
        guard Self.isIdentifier(code) else {
            self = .retry(reason: .unknownError)
            return
        }
        let reason = DeliveryReason(stored: code)
        switch reason {
        case .notRegistered:
            self = .notRegistered
        case .invalidRegistration, .mismatchSenderID, .invalidPackageName, .missingRegistration:
            self = .deadToken(reason: reason)
        case .messageTooBig, .invalidDataKey, .invalidTTL, .invalidParameters, .invalidJSON:
            self = .deadMessage(reason: reason)
        case .unavailable, .internalServerError:
            self = .retry(reason: reason)
        case .deviceMessageRateExceeded, .topicsMessageRateExceeded:
            self = .retrySlow(reason: reason)
        case .invalidAPNsCredential:
            self = .pauseApp(reason: reason)
        default:
            self = .retry(reason: reason)
        }
    }

    /// An error code short and plain enough to store as a reason; anything else from the network is not stored.
    public static func isIdentifier(_ code: String) -> Bool {
        let bytes = code.utf8
        return (1...64).contains(bytes.count) && bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                true
            default:
                false
            }
        }
    }
}
