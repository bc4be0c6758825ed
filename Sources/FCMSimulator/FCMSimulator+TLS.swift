import Foundation
import HTTP
import Support

// MARK: - HTTPS: the simulator over TLS, HTTP/2 and HTTP/1.1

extension FCMSimulator {
    /// Where `--tls-listen` serves the simulator over HTTPS, and with which certificate: APNs' side needs it (Apple
    /// speaks only HTTP/2 over TLS), and every other route works over it too.
    public struct TLSListener: Sendable, Equatable {
        public var address: ListenAddress
        /// The PEM certificate chain and private key to serve (`--tls-cert`, `--tls-key`); both nil makes a
        /// self-signed certificate for loopback at start (`serveTLS`).
        public var certificateFile: String?
        public var keyFile: String?
        /// Where the certificate served is written as PEM (`--tls-cert-out`), for clients to trust.
        public var certificateOut: String?
        /// `SETTINGS_MAX_CONCURRENT_STREAMS` of every HTTP/2 connection.
        public var maxConcurrentStreams: Int

        public init(
            address: ListenAddress, certificateFile: String? = nil, keyFile: String? = nil,
            certificateOut: String? = nil, maxConcurrentStreams: Int = 1000
        ) {
            self.address = address
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.certificateOut = certificateOut
            self.maxConcurrentStreams = maxConcurrentStreams
        }
    }

    /// A running HTTPS front of the simulator.
    public struct TLSFront: Sendable {
        public let server: HTTPSServer
        /// The bound address, with the kernel's port when port 0 was asked for.
        public let address: ListenAddress
        /// The certificate served (PEM): what a client trusts as its CA file.
        public let certificatePEM: String

        /// `https://HOST:PORT`: the APNs endpoint (`/3/device/{token}` follows), and FCM's base URL over TLS.
        public var baseURL: String { "https://\(address)" }
    }

    /// The names a self-signed certificate is made for: loopback, and the host listened on when it is a name or
    /// address of its own (not the wildcard).
    static func certificateNames(for address: ListenAddress) -> [String] {
        var names = ["127.0.0.1", "::1", "localhost"]
        if case .tcp(let host, _) = address, !["0.0.0.0", "::", ""].contains(host),
           !names.contains(host.lowercased()) {
            names.append(host)
        }
        return names
    }

    /// Serves this simulator over HTTPS on `listener.address` (HTTP/2 when the client's ALPN offers `h2`, else
    /// HTTP/1.1), with the given certificate or a new self-signed one, and writes the certificate to
    /// `listener.certificateOut` when set. Throws a message for the operator when the files are unusable.
    ///
    /// ```swift
    /// let front = try simulator.serveTLS(.init(address: .tcp(host: "127.0.0.1", port: 0), certificateOut: "ca.pem"))
    /// // HTTP2ClientPool(maxConnectionsPerHost: 1, http1Connections: 1, caFile: "ca.pem") → front.baseURL
    /// front.server.shutdown(gracePeriod: 1)
    /// ```
    public func serveTLS(_ listener: TLSListener) throws(HTTPServerError) -> TLSFront {
        let identity: TLSIdentity
        if let certificateFile = listener.certificateFile, let keyFile = listener.keyFile {
            identity = try TLSIdentity(certificateFile: certificateFile, keyFile: keyFile)
        } else {
            identity = try TLSIdentity.selfSigned(names: Self.certificateNames(for: listener.address))
        }
        if let path = listener.certificateOut {
            do {
                try identity.certificatePEM.write(toFile: path, atomically: true, encoding: .utf8)
            } catch {
                throw HTTPServerError("cannot write the TLS certificate to \(path): \(error.localizedDescription)")
            }
        }
        var configuration = HTTPSServerConfiguration(
            address: listener.address, identity: identity, maxConcurrentStreams: listener.maxConcurrentStreams)
        // Two loops: benchmarks multiplex tens of thousands of requests a second over about ten connections.
        configuration.server.eventLoops = 2
        let server = HTTPSServer(configuration: configuration, handler: self)
        let bound: ListenAddress
        do {
            bound = try server.start()
        } catch let error as HTTPServerError {
            throw error
        } catch {
            throw HTTPServerError("cannot listen on \(listener.address) for TLS: \(error)")
        }
        return TLSFront(server: server, address: bound, certificatePEM: identity.certificatePEM)
    }
}
