import FCMSimulator
import Foundation
import HTTP
import Support

/// `herald fcm-sim --listen HOST:PORT [options]`: the FCM simulator as a process of its own.
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
        let server = HTTPServer(configuration: HTTPServerConfiguration(address: address),
                                handler: FCMSimulator(configuration: configuration))
        let bound = try server.start()
        Log.info("fcm-sim listening", [
            "address": .string("\(bound)"), "endpoint": .string(endpointURL(bound)),
            "v1_endpoint": .string("http://\(bound)"), "token_uri": .string("http://\(bound)\(FCMSimulator.tokenPath)"),
        ])
        var received: Int32 = 0
        sigwait(&signals, &received)
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
