import HTTP
import Testing

@Suite struct ListenAddressTests {
    @Test(arguments: [
        ("127.0.0.1:8600", ListenAddress.tcp(host: "127.0.0.1", port: 8600)),
        ("0.0.0.0:80", .tcp(host: "0.0.0.0", port: 80)),
        ("[::1]:8600", .tcp(host: "::1", port: 8600)),
        ("[::]:0", .tcp(host: "::", port: 0)),
        ("localhost:8600", .tcp(host: "localhost", port: 8600)),
        ("herald.internal:65535", .tcp(host: "herald.internal", port: 65535)),
        ("unix:/run/herald.sock", .unix(path: "/run/herald.sock")),
    ])
    func parsesAndPrintsBack(text: String, expected: ListenAddress) throws {
        let address = try ListenAddress.parse(text)
        #expect(address == expected)
        #expect(address.description == text)
    }

    @Test(arguments: [
        ("8600", "expected host:port"),
        (":8600", "the host is empty"),
        ("127.0.0.1:", "the port must be"),
        ("127.0.0.1:65536", "the port must be"),
        ("127.0.0.1:-1", "the port must be"),
        ("127.0.0.1:http", "the port must be"),
        ("::1:8600", "needs brackets"),
        ("[::1]8600", "expected \":port\""),
        ("[::1:8600", "missing \"]\""),
        ("[not-v6]:8600", "is not an IPv6 address"),
        ("unix:", "the socket path is empty"),
        ("unix:/\(String(repeating: "a", count: 200))", "longer than"),
    ])
    func rejectsBadInputWithAReason(text: String, reason: String) {
        #expect {
            try ListenAddress.parse(text)
        } throws: { error in
            guard let error = error as? ListenAddress.ParseError else { return false }
            return error.message.contains(reason) && error.message.contains(text.prefix(20))
        }
    }

    @Test(arguments: [
        ("127.0.0.1:1", true),
        ("127.1.2.3:1", true),
        ("[::1]:1", true),
        ("[::ffff:127.0.0.1]:1", true),
        ("localhost:1", true),
        ("LOCALHOST:1", true),
        ("unix:/tmp/h.sock", true),
        ("0.0.0.0:1", false),
        ("[::]:1", false),
        ("10.0.0.1:1", false),
        ("128.0.0.1:1", false),
        ("example.com:1", false),
    ])
    func loopbackIsOnlyThisMachine(text: String, loopback: Bool) throws {
        #expect(try ListenAddress.parse(text).isLoopback == loopback)
    }
}
