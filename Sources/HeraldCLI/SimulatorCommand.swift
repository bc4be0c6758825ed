import FCMSimulator
import Foundation
import HTTP
import ProviderList
import Support

/// `herald fcm-sim --listen HOST:PORT [--tls-listen HOST:PORT] [options]`: the simulator as a process of its own, with
/// every provider's side (`ProviderList.simulatorSides`), on a cleartext listener and, when asked, an HTTPS one
/// (HTTP/2 and HTTP/1.1) serving the same simulator.
enum SimulatorCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(FCMSimulator.help(sides: ProviderList.simulatorSides))
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
        let simulator: FCMSimulator
        let address: ListenAddress
        do {
            simulator = try FCMSimulator.parse(arguments: rest, sides: ProviderList.simulatorSides)
            address = try ListenAddress.parse(listenText)
        } catch {
            throw Arguments.UsageError(description: "\(error)")
        }
        let configuration = simulator.configuration
        var signals = blockTerminationSignals()
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
        // One line for both listeners, so whoever waits for it learns both addresses at once; each side says where
        // it listens (FCM legacy's `endpoint`, v1's `v1_endpoint` and `token_uri`).
        var fields: [(key: String, value: Log.Value)] = [("address", .string("\(bound)"))]
        fields += simulator.announcement(baseURL: "http://\(bound)").map { ($0.key, .string($0.value)) }
        if let front {
            fields += [
                ("tls_address", .string("\(front.address)")), ("https_endpoint", .string(front.baseURL)),
                ("tls_cert_out", .string(configuration.tls?.certificateOut ?? "")),
            ]
        }
        Log.info("fcm-sim listening", fields)
        var received: Int32 = 0
        sigwait(&signals, &received)
        front?.server.shutdown(gracePeriod: 2)
        server.shutdown(gracePeriod: 2)
        return 0
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
