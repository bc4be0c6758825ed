import Glibc
import Posix
import Testing

/// SPEC §19's address policy, pure: which hosts, in which spelling, are refused before DNS, and which resolved
/// addresses and ports a socket may connect to.
@Suite struct AddressPolicyTests {
    private let policy = AddressPolicy(allowsPrivate: false)

    /// Every spelling of an address in a special range, with its range; nil: a public address.
    @Test(arguments: [
        ("127.0.0.1", "loopback"), ("[::1]", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
        ("172.31.255.255", "private"), ("192.168.1.1", "private"), ("169.254.169.254", "link-local"),
        ("100.64.0.1", "shared (CGNAT)"), ("0.0.0.0", "unspecified"), ("224.0.0.1", "multicast"),
        ("255.255.255.255", "broadcast"), ("240.0.0.1", "reserved"), ("192.0.2.1", "documentation"),
        // Every form inet_aton reads, as getaddrinfo and libcurl do.
        ("0x7f.0.0.1", "loopback"), ("2130706433", "loopback"), ("0177.0.0.1", "loopback"), ("127.1", "loopback"),
        ("0x7f000001", "loopback"), ("127.0.0.1.", "loopback"),
        // IPv6, and IPv6 carrying IPv4: mapped, SIIT, NAT64, 6to4, IPv4-compatible.
        ("[::ffff:127.0.0.1]", "loopback"), ("[::ffff:7f00:1]", "loopback"), ("[::ffff:a9fe:a9fe]", "link-local"),
        ("[::ffff:0:10.0.0.1]", "private"), ("[64:ff9b::10.0.0.1]", "private"), ("[2002:7f00:1::1]", "loopback"),
        ("[::127.0.0.1]", "reserved"), ("[fe80::1]", "link-local"), ("[fc00::1]", "private"),
        ("[fd12:3456::1]", "private"),
        ("[::]", "unspecified"), ("[ff02::1]", "multicast"), ("[2001:db8::1]", "documentation"),
        ("[2001::1]", "reserved"), ("[fec0::1]", "reserved"), ("[4000::1]", "reserved"),
        // Public.
        ("8.8.8.8", nil), ("1.1.1.1", nil), ("172.32.0.1", nil), ("100.128.0.1", nil), ("[2001:4860::1]", nil),
        ("[2a00:1450:4001::200e]", nil), ("[::ffff:8.8.8.8]", nil), ("[64:ff9b::8.8.8.8]", nil),
    ] as [(String, String?)])
    func eachSpellingIsJudgedByItsAddress(host: String, range: String?) throws {
        let address = try #require(IPAddress(literal: host))
        #expect(address.specialRange == range, "\(host) → \(address)")
        #expect((policy.refusal(host: host, port: 443) != nil) == (range != nil), "\(host)")
        #expect(AddressPolicy(allowsPrivate: true).refusal(host: host, port: 8443) == nil)
    }

    @Test func namesAreNotAddressesAndPassUntilResolved() {
        for name in ["push.example.net", "fcm.googleapis.com", "1.2.3.4.nip.io", "0x7g.0.0.1", "127.0.0.1 x"] {
            #expect(IPAddress(literal: name) == nil, "\(name)")
            #expect(policy.refusal(host: name, port: 443) == nil, "\(name)")
        }
    }

    @Test func localhostAndAnyPortButHTTPSAreRefusedWithoutDNS() {
        for host in ["localhost", "LOCALHOST", "localhost.", "a.b.localhost"] {
            #expect(policy.refusal(host: host, port: 443)?.contains("this machine") == true, "\(host)")
        }
        #expect(policy.refusal(host: "push.example.net", port: 8443) == "port 8443 is not 443")
        #expect(policy.refusal(host: "0x7f.0.0.1", port: 443) == "0x7f.0.0.1 is a loopback address (127.0.0.1)")
        #expect(policy.refusal(host: "[::1]", port: 443) == "[::1] is a loopback address")
    }

    /// At connect time: the address DNS gave and its port, as `getaddrinfo` writes them.
    @Test func aResolvedAddressIsPermittedOnlyWhenPublicAndOnPort443() throws {
        func resolved(_ host: String, _ port: Int) throws -> SocketAddress {
            try #require(try SocketAddress.lookUp(host: host, port: port, numericOnly: true).first)
        }
        #expect(policy.permits(try resolved("8.8.8.8", 443)))
        #expect(policy.permits(try resolved("2001:4860::1", 443)))
        #expect(!policy.permits(try resolved("8.8.8.8", 80)))
        #expect(!policy.permits(try resolved("127.0.0.1", 443)))
        #expect(!policy.permits(try resolved("::ffff:169.254.169.254", 443)))
        #expect(!policy.permits(try resolved("fe80::1", 443)))
        #expect(AddressPolicy(allowsPrivate: true).permits(try resolved("127.0.0.1", 8080)))
    }
}
