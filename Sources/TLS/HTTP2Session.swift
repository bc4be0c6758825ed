import CNGHTTP2

/// What the HTTP/2 client (`Send`) and the HTTPS server (`HTTP`) set up the same way in libnghttp2: the callbacks and
/// options made once per side, a session with its SETTINGS and connection window queued to go out first, and the
/// frames it has to send moved into a `TLSStream`'s output. The session never touches the socket; the callbacks are
/// each side's own.
///
/// ```swift
/// static let callbacks = HTTP2Session.callbacks { nghttp2_session_callbacks_set_on_frame_recv_callback($0, onFrame) }
/// let session = HTTP2Session.make(.client, callbacks: callbacks, options: options, context: context,
///                                 settings: HTTP2Session.Settings(streamWindow: 1 << 20, connectionWindow: 16 << 20,
///                                                                 maxHeaderListSize: 64 << 10))
/// ```
public enum HTTP2Session {
    /// What one side announces: the stream window it gives (SETTINGS_INITIAL_WINDOW_SIZE), the connection window
    /// (a WINDOW_UPDATE on stream 0), the header list it takes, and — a server — the streams it takes at once.
    /// A client also says it takes no server push.
    public struct Settings: Sendable {
        public var streamWindow: Int
        public var connectionWindow: Int
        public var maxHeaderListSize: Int
        public var maxConcurrentStreams: Int?

        public init(
            streamWindow: Int, connectionWindow: Int, maxHeaderListSize: Int, maxConcurrentStreams: Int? = nil
        ) {
            self.streamWindow = streamWindow
            self.connectionWindow = connectionWindow
            self.maxHeaderListSize = maxHeaderListSize
            self.maxConcurrentStreams = maxConcurrentStreams
        }
    }

    /// Callbacks for every session of one side, set by `register`: copied into each session made with them, and
    /// only read after that.
    public static func callbacks(_ register: (OpaquePointer) -> Void) -> OpaquePointer {
        var made: OpaquePointer?
        precondition(nghttp2_session_callbacks_new(&made) == 0, "nghttp2_session_callbacks_new failed")
        register(made!)
        return made!
    }

    /// Options for every session of one side: closed streams are not kept for the priority tree (neither side sets
    /// priorities); a client assumes `peerMaxConcurrentStreams` until the server's SETTINGS say otherwise.
    public static func options(peerMaxConcurrentStreams: Int? = nil) -> OpaquePointer {
        var made: OpaquePointer?
        precondition(nghttp2_option_new(&made) == 0, "nghttp2_option_new failed")
        nghttp2_option_set_no_closed_streams(made, 1)
        if let peerMaxConcurrentStreams {
            nghttp2_option_set_peer_max_concurrent_streams(made, UInt32(clamping: peerMaxConcurrentStreams))
        }
        return made!
    }

    /// A session for `role` whose callbacks get `context`, with `settings` queued to go out first; nil when nghttp2
    /// cannot make it (out of memory).
    public static func make(
        _ role: TLSStream.Role, callbacks: OpaquePointer, options: OpaquePointer, context: UnsafeMutableRawPointer,
        settings: Settings
    ) -> OpaquePointer? {
        var made: OpaquePointer?
        let created = switch role {
        case .client: nghttp2_session_client_new2(&made, callbacks, context, options)
        case .server: nghttp2_session_server_new2(&made, callbacks, context, options)
        }
        guard created == 0, let made else { return nil }
        func entry(_ id: nghttp2_settings_id, _ value: Int) -> nghttp2_settings_entry {
            nghttp2_settings_entry(settings_id: Int32(id.rawValue), value: UInt32(clamping: value))
        }
        var entries = [
            entry(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.streamWindow),
            entry(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings.maxHeaderListSize),
        ]
        if role == .client { entries.append(entry(NGHTTP2_SETTINGS_ENABLE_PUSH, 0)) }
        if let streams = settings.maxConcurrentStreams {
            entries.append(entry(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, streams))
        }
        guard nghttp2_submit_settings(made, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count) == 0,
              nghttp2_session_set_local_window_size(
                made, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(clamping: settings.connectionWindow)) == 0
        else {
            nghttp2_session_del(made)
            return nil
        }
        return made
    }

    /// The session wants nothing more: a GOAWAY went out or came in and no stream is left, or it ended itself after
    /// a protocol error.
    public static func hasEnded(_ session: OpaquePointer) -> Bool {
        nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    /// nghttp2's text for one of its (negative) error codes.
    public static func errorText(_ code: Int) -> String {
        String(cString: nghttp2_strerror(Int32(clamping: code)))
    }
}

extension TLSStream {
    /// Moves what `session` has to send into `output`, until `limit` bytes wait there; the session's error text when
    /// it failed, else nil.
    public func takeOutput(from session: OpaquePointer, limit: Int) -> String? {
        compactOutput()
        while pendingOutput < limit {
            var chunk: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &chunk)
            if length < 0 { return HTTP2Session.errorText(length) }
            guard length > 0, let chunk else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: chunk, count: length))
        }
        return nil
    }
}
