/// Compares two secrets in time that depends only on their lengths, not on where they differ.
public func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    var difference = UInt8(lhs.count == rhs.count ? 0 : 1)
    for index in 0..<max(lhs.count, rhs.count) {
        difference |= (index < lhs.count ? lhs[index] : 0) ^ (index < rhs.count ? rhs[index] : 0)
    }
    return difference == 0
}
