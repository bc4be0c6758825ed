/// A small seeded generator (Steele, Lea and Flood's SplitMix64), so a run with the same seed draws the same
/// faults for the same sequence of requests.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// True with probability `rate`; draws nothing for a rate of 0 or 1, so those never shift the sequence.
    mutating func chance(_ rate: Double) -> Bool {
        if rate <= 0 { return false }
        if rate >= 1 { return true }
        return Double(next() >> 11) * 0x1p-53 < rate
    }
}
