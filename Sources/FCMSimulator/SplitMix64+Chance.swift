import Support

extension SplitMix64 {
    /// True with probability `rate`; draws nothing for a rate of 0 or 1, so those never shift the sequence.
    mutating func chance(_ rate: Double) -> Bool {
        if rate <= 0 { return false }
        if rate >= 1 { return true }
        return Double(next() >> 11) * 0x1p-53 < rate
    }
}
