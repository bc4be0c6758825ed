import FCMSimulator
import Foundation
import HTTP
import Support

/// `herald fcm-sim --listen HOST:PORT [--tls-listen HOST:PORT] [options]`: the FCM simulator as a process of its own,
/// on a cleartext listener and, when asked, an HTTPS one (HTTP/2 and HTTP/1.1) serving the same simulator.
enum SimulatorCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(FCMSimulator.Configuration.help)
            return 0
        }
        var rest: [String] = []
        var listenText = "127.0.0.1:8700"
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--listen" {
                guard index + 1 < arguments.count else {
                    throw Arguments.UsageError(description: "--listen needs a value")
                }
                listenText = arguments[index + 1]
                index += 2
            } else if arguments[index].hasPrefix("--listen=") {
                listenText = String(arguments[index].dropFirst("--listen=".count))
                index += 1
            } else {
                rest.append(arguments[index])
                index += 1
            }
        }
        let configuration: FCMSimulator.Configuration
        let address: ListenAddress
        do {
            configuration = try FCMSimulator.Configuration.parse(arguments: rest)
            address = try ListenAddress.parse(listenText)
        } catch {
            throw Arguments.UsageError(description: "\(error)")
        }
        var signals = blockTerminationSignals()
        let simulator = FCMSimulator(configuration: configuration)
        let server = HTTPServer(configuration: HTTPServerConfiguration(address: address), handler: simulator)
        let bound = try server.start()
        let front: FCMSimulator.TLSFront?
        do {
            front = try configuration.tls.map(simulator.serveTLS)
        } catch {
            // An unreadable certificate, a key that is not its, an address in use: said as OpenSSL or the kernel
            // says it.
            server.shutdown(gracePeriod: 0)
            throw error
        }
        let (cleartext, tokenURI) = ("http://\(bound)", "http://\(bound)\(FCMSimulator.tokenPath)")
        if let front {
            // One line for both listeners, so whoever waits for it learns both addresses at once.
            Log.info("fcm-sim listening", [
                "address": .string("\(bound)"), "endpoint": .string(endpointURL(bound)),
                "v1_endpoint": .string(cleartext), "token_uri": .string(tokenURI),
                "tls_address": .string("\(front.address)"), "https_endpoint": .string(front.baseURL),
                "tls_cert_out": .string(configuration.tls?.certificateOut ?? ""),
            ])
        } else {
            Log.info("fcm-sim listening", [
                "address": .string("\(bound)"), "endpoint": .string(endpointURL(bound)),
                "v1_endpoint": .string(cleartext), "token_uri": .string(tokenURI),
            ])
        }
        var received: Int32 = 0
        sigwait(&signals, &received)
        front?.server.shutdown(gracePeriod: 2)
        server.shutdown(gracePeriod: 2)
        return 0
    }

    /// The legacy send URL of a simulator listening at `address`.
    static func endpointURL(_ address: ListenAddress) -> String {
        "http://\(address)/fcm/send"
    }
}

/// Blocks SIGTERM and SIGINT in this thread (and every thread started after) so `sigwait` can take them.
func blockTerminationSignals() -> sigset_t {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    sigaddset(&signals, SIGINT)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    return signals
}
