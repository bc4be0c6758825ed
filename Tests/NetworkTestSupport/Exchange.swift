import Send

/// One request through `pool`, awaited: the stand-ins' stats and control endpoints.
func exchange(_ pool: any RequestTransport, _ request: OutboundRequest) async -> (TransportResult, Double) {
    await withCheckedContinuation { continuation in
        pool.submit(request) { result, seconds in continuation.resume(returning: (result, seconds)) }
    }
}
