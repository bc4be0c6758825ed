import Glibc
import NetworkTestSupport
import Posix
import Testing

@testable import Send

/// The address policy where it holds (SPEC §19): after DNS, before any socket connects, in both pools. `localhost`
/// is refused at ingest, so only a pool ever sees it: it resolves to loopback, and nothing may connect there.
@Suite struct AddressPolicyConnectTests {
    private let publicOnly = AddressPolicy(allowsPrivate: false)

    /// A loopback port that listens but never accepts: whether anything connected is whether a connection waits in
    /// its queue.
    private func listeningPort() -> (fd: CInt, port: Int) {
        let (fd, port) = refusingPort()
        precondition(listen(fd, 16) == 0)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return (fd, port)
    }

    private func connectionWaits(on fd: CInt) -> Bool {
        let accepted = accept(fd, nil, nil)
        if accepted >= 0 { close(accepted) }
        return accepted >= 0
    }

    @Test func aNameThatResolvesToLoopbackFailsForbiddenAddressOverHTTP2WithoutConnecting() async {
        let (fd, port) = listeningPort()
        defer { close(fd) }
        let pool = HTTP2ClientPool(
            maxConnectionsPerHost: 2, http1Connections: 2, name: "policy-h2", caFile: nil, addressPolicy: publicOnly)
        defer { pool.shutdown(gracePeriod: 0) }

        let (byName, _) = await send(pool, OutboundRequest(url: "https://localhost:\(port)/push/1"))
        let (byAddress, _) = await send(pool, OutboundRequest(url: "https://0x7f.0.0.1:\(port)/push/2"))

        #expect(byName.failureReason == "ForbiddenAddress")
        #expect(byAddress.failureReason == "ForbiddenAddress")
        #expect(!connectionWaits(on: fd), "no connection was attempted")
    }

    @Test func aNameThatResolvesToLoopbackFailsForbiddenAddressOverHTTP1WithoutConnecting() async {
        let (fd, port) = listeningPort()
        defer { close(fd) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "policy-h1", caFile: nil, addressPolicy: publicOnly)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: "https://localhost:\(port)/push/1"))

        #expect(result.failureReason == "ForbiddenAddress")
        #expect(!connectionWaits(on: fd), "no connection was attempted")
    }

    /// The control: without the policy the same request does connect (and then times out: nothing accepts).
    @Test func withoutThePolicyTheSameRequestConnects() async {
        let (fd, port) = listeningPort()
        defer { close(fd) }
        let pool = HTTPClientPool(maxConnectionsPerHost: 2, name: "policy-none", caFile: nil)
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(
            url: "http://127.0.0.1:\(port)/", timeoutMillis: 300, connectTimeoutMillis: 300))

        #expect(result.failureReason != "ForbiddenAddress")
        #expect(connectionWaits(on: fd))
    }

    /// A stranger's server is not told about in detail: a certificate Herald does not trust is just a failed
    /// handshake.
    @Test func aFailedHandshakeWithAStrangersServerSaysNoMore() async throws {
        let standIn = try H2StandIn()
        let pool = HTTP2ClientPool(
            maxConnectionsPerHost: 2, http1Connections: 2, name: "policy-tls", caFile: nil,
            addressPolicy: AddressPolicy(allowsPrivate: true))
        defer { pool.shutdown(gracePeriod: 0) }

        let (result, _) = await send(pool, OutboundRequest(url: standIn.baseURL + "/push/1", body: [1]))

        #expect(result.failureReason == "TLS handshake failed")
    }
}
