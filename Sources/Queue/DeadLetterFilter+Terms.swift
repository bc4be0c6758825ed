/// What a `DeadLetterFilter` means, decided once: the terms a dead letter must match. Each engine writes one SQL
/// condition per term on `deliveries AS d`, joined by AND after `d.state = 'dead'`, and binds every value.
extension DeadLetterFilter {
    public enum Term: Sendable, Equatable {
        case app(String)
        case reason(String)
        /// Died at or after this time.
        case diedSince(Int64)
        /// Died at or before this time.
        case diedUntil(Int64)
        /// Sent to this token (or topic, or condition).
        case token(String)
        /// Listed after the cursor, newest death first: died before it, or at the same time with a lower id.
        case after(DeadLetterCursor)
        /// One of these deliveries (never empty).
        case deliveryIDs([Int64])
    }

    /// The filter's terms, in a fixed order; none for a filter that matches every dead letter.
    public var terms: [Term] {
        var terms: [Term] = []
        if let app { terms.append(.app(app)) }
        if let reason { terms.append(.reason(reason)) }
        if let diedSince { terms.append(.diedSince(diedSince)) }
        if let diedUntil { terms.append(.diedUntil(diedUntil)) }
        if let token { terms.append(.token(token)) }
        if let after { terms.append(.after(after)) }
        if !deliveryIDs.isEmpty { terms.append(.deliveryIDs(deliveryIDs)) }
        return terms
    }
}
