import Digest

/// Why a device id salt was refused; the description never repeats the salt.
public enum DeviceIDSaltError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(minimum: Int)

    public var description: String {
        switch self {
        case .tooShort(let minimum): "the device id salt must be at least \(minimum) bytes; use a long random secret"
        }
    }
}

/// Replaces device ids with a keyed hash, HMAC-SHA256(salt, id) in 64 lowercase hex digits, so
/// that the log holds no install id an app or a vendor could match against its own records.
///
/// The same id always gives the same result under one salt, so everything engage computes per
/// device (engagement, experiment variance, assignments) is unchanged. Without the salt the
/// result cannot be reversed, not even by hashing every plausible id.
public struct DeviceIDHasher: Sendable {
    public static let minimumSaltBytes = 16
    private let hmac: HMACSHA256

    public init(salt: String) throws(DeviceIDSaltError) {
        guard salt.utf8.count >= Self.minimumSaltBytes else { throw .tooShort(minimum: Self.minimumSaltBytes) }
        hmac = HMACSHA256(key: Array(salt.utf8))
    }

    public func hash(_ deviceID: String) -> String {
        Hex.encode(hmac.authenticationCode(for: Array(deviceID.utf8)))
    }
}
