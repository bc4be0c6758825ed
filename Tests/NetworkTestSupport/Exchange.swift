import Send

/// One request through `pool`, awaited: the stand-ins' stats and control endpoints. Each on a connection of its own
/// (`Connection: close`): node closes a keep-alive connection idle for 5 s, and on a loaded machine a test's next
/// request can come just as it does, on the connection going away, and fail as `reset`.
func exchange(_ pool: any RequestTransport, _ request: OutboundRequest) async -> (TransportResult, Double) {
    var request = request
    request.headers.append(("connection", "close"))
    return await withCheckedContinuation { continuation in
        pool.submit(request) { result, seconds in continuation.resume(returning: (result, seconds)) }
    }
}
