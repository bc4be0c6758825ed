import Foundation
@testable import HTTP
import Testing
import TestSupport

/// The server hands each request its client's address, the value that wrong tokens are counted by and logged with.
@Suite struct PeerAddressTests {
    private static let peerEcho = TestHandler { request, responder in
        responder.respond(.text(200, request.peer.map { "\($0)" } ?? "none"))
    }

    @Test func aTCPClientIsItsAddressAndAUnixSocketsClientIsUnix() throws {
        let (server, address) = try startServer(Self.peerEcho)
        defer { server.shutdown(gracePeriod: 1) }
        let client = try RawHTTPClient(address)
        try client.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try client.readResponse().body == "127.0.0.1")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("peer-\(UUID().uuidString).sock").path
        let (unixServer, unixAddress) = try startServer(Self.peerEcho, address: .unix(path: path))
        defer { unixServer.shutdown(gracePeriod: 1) }
        let local = try RawHTTPClient(unixAddress)
        try local.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try local.readResponse().body == "unix")
    }

    @Test func addressesAreWrittenAsLogsShowThem() {
        #expect(PeerAddress.ipv4(0xC633_6407).description == "198.51.100.7")
        #expect(PeerAddress.ipv6(high: 0x2001_0DB8_0000_0000, low: 1).description == "2001:db8::1")
        #expect(PeerAddress(ipv6: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1]) == .ipv4(0x7F00_0001))
        #expect(PeerAddress(ipv6: Array(repeating: 0, count: 15) + [1]) == .ipv6(high: 0, low: 1))
    }
}
