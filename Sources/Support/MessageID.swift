import Foundation
import Synchronization

/// Sortable unique ids (ULID layout): 48 bits of Unix milliseconds then 80 random bits, in Crockford base32,
/// 26 characters. Ids made by one process are strictly increasing, even within one millisecond.
public enum MessageID {
    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    private static let last = Mutex<(millis: UInt64, random: (UInt16, UInt64))>((0, (0, 0)))

    public static func make(now: Int64 = Clock.nowMillis()) -> String {
        let (millis, random) = last.withLock { last -> (UInt64, (UInt16, UInt64)) in
            let millis = max(UInt64(now), last.millis)
            if millis == last.millis {
                // Same millisecond: increment the random part so order follows creation.
                var (high, low) = last.random
                low &+= 1
                if low == 0 { high &+= 1 }
                last.random = (high, low)
            } else {
                last = (millis, (UInt16.random(in: 0...UInt16.max), UInt64.random(in: 0...UInt64.max)))
            }
            return (millis, last.random)
        }
        return format(millis: millis, high: random.0, low: random.1)
    }

    static func format(millis: UInt64, high: UInt16, low: UInt64) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: millis >> (8 * (5 - index))) }
        bytes[6] = UInt8(truncatingIfNeeded: high >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: high)
        for index in 0..<8 { bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (8 * (7 - index))) }
        return encode(bytes)
    }

    /// 128 bits as 26 base32 digits, most significant first (the first digit carries 3 bits).
    private static func encode(_ bytes: [UInt8]) -> String {
        var output = [UInt8](repeating: 0, count: 26)
        var accumulator: UInt32 = 0
        var bits = 2 // 130 bits of output for 128 of input: pad two zero bits in front
        var outputIndex = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                output[outputIndex] = alphabet[Int((accumulator >> UInt32(bits)) & 31)]
                outputIndex += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
