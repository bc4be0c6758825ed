import Foundation

/// What an HTTPS server proves itself with: its certificate chain (the server's own certificate first, then any
/// intermediates) and its private key, as PEM text. Given as files (`--tls-cert`, `--tls-key`), or made in-process
/// for loopback (`selfSigned(names:)`), whose certificate a client then trusts as it is.
///
/// ```swift
/// let identity = try TLSIdentity.selfSigned(names: ["127.0.0.1", "localhost"])
/// try identity.certificatePEM.write(toFile: "sim.pem", atomically: true, encoding: .utf8)  // curl --cacert sim.pem
/// ```
///
/// The key is never logged, and `description` leaves it out.
public struct TLSIdentity: Sendable, Equatable, CustomStringConvertible {
    public var certificatePEM: String
    public var privateKeyPEM: String

    public init(certificatePEM: String, privateKeyPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
    }

    /// Reads a PEM certificate chain and a PEM private key (PKCS#8, SEC 1 or PKCS#1). Whether they are PEM and
    /// belong together is checked when a server starts with them (`HTTPSServer.start`).
    public init(certificateFile: String, keyFile: String) throws(HTTPServerError) {
        func read(_ path: String, _ what: String) throws(HTTPServerError) -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HTTPServerError("cannot read the TLS \(what) file \(path)")
            }
            return String(decoding: data, as: UTF8.self)
        }
        certificatePEM = try read(certificateFile, "certificate")
        privateKeyPEM = try read(keyFile, "key")
    }

    public var description: String {
        "TLSIdentity(certificate: \(certificatePEM.utf8.count) bytes of PEM, key: hidden)"
    }
}
