import CCurl
import Glibc
import Posix

/// What `HTTPClientPool` and its loop thread share: the pool's shell (mailbox, in-flight count, wake-up) and the
/// libcurl multi handle with its connection count.
final class PoolCore: Sendable {
    /// The multi handle's pointer; only the loop thread uses it.
    struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    /// Open connections (sockets), kept by curl's open and close socket callbacks on the loop thread and read
    /// from any thread. Freed with the core, after the loop has closed every connection.
    struct Counter: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<Int>
    }

    /// libcurl's pool posts nothing but submissions.
    let shell: PoolShell<Never>
    let maxConnectionsPerHost: Int
    /// Connections to all hosts together at most (nil: no limit but the one per host).
    let maxConnections: Int?
    let maxResponseBytes: Int
    let multi: MultiHandle
    let connectionCounter: Counter
    let caFile: String?
    /// Where its sockets may connect to (`HTTPClientPool.init`); nil: anywhere.
    let addressPolicy: AddressPolicy?

    init(
        name: String, maxConnectionsPerHost: Int, maxConnections: Int?, maxResponseBytes: Int, caFile: String?,
        addressPolicy: AddressPolicy?
    ) {
        guard let pointer = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        shell = PoolShell(name: name)
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxConnections = maxConnections
        self.maxResponseBytes = maxResponseBytes
        self.caFile = caFile
        self.addressPolicy = addressPolicy
        multi = MultiHandle(pointer: pointer)
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        connectionCounter = Counter(pointer: counter)
        // One request per connection (HTTP/1.1). The loop hands curl no more than these (requests beyond them wait
        // in the loop, `TransferOrigin`); the limits are curl's too, which closes an idle connection to another host
        // rather than pass the total.
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        if let maxConnections {
            _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxConnections)
        }
        // Room for every connection to the FCM host plus as many to a second host (the OAuth token endpoint)
        // before the cache starts closing idle connections that are about to be reused.
        _ = herald_curl_multi_setopt_long(pointer, CURLMOPT_MAXCONNECTS, 2 * maxConnectionsPerHost)
    }

    deinit {
        connectionCounter.pointer.deallocate()
    }

    /// Connections open (or opening) right now.
    var connections: Int {
        herald_load_counter(connectionCounter.pointer)
    }
}
