/// How fast a device downloads: a download of `b` bytes takes
/// `latencyMS + 1000 * b / throughputBytesPerSecond` milliseconds. A throughput of zero means the
/// device cannot download at all (offline).
public struct NetworkProfile: Sendable, Hashable {
    public var throughputBytesPerSecond: Double
    /// Time to first byte: DNS, connection, TLS and the request's round trip.
    public var latencyMS: Double

    public init(throughputBytesPerSecond: Double, latencyMS: Double) {
        precondition(throughputBytesPerSecond >= 0 && throughputBytesPerSecond.isFinite,
                     "throughput must be finite and not negative")
        precondition(latencyMS >= 0 && latencyMS.isFinite, "latency must be finite and not negative")
        self.throughputBytesPerSecond = throughputBytesPerSecond
        self.latencyMS = latencyMS
    }

    /// Predicted download time of `bytes` in milliseconds; infinite when offline.
    public func downloadMS(bytes: Int) -> Double {
        guard throughputBytesPerSecond > 0 else { return .infinity }
        return latencyMS + Double(bytes) * 1000 / throughputBytesPerSecond
    }

    /// Assumed profile of a network type when a device has no usable history: deliberately
    /// middling figures (Wi-Fi 3 MB/s and 40 ms, cellular 750 kB/s and 120 ms, ethernet 10 MB/s
    /// and 10 ms, unknown 500 kB/s and 150 ms, offline nothing).
    public static func typical(for network: NetworkType) -> NetworkProfile {
        switch network {
        case .wifi: NetworkProfile(throughputBytesPerSecond: 3_000_000, latencyMS: 40)
        case .cellular: NetworkProfile(throughputBytesPerSecond: 750_000, latencyMS: 120)
        case .ethernet: NetworkProfile(throughputBytesPerSecond: 10_000_000, latencyMS: 10)
        case .unknown: NetworkProfile(throughputBytesPerSecond: 500_000, latencyMS: 150)
        case .offline: NetworkProfile(throughputBytesPerSecond: 0, latencyMS: 0)
        }
    }
}

extension NetworkProfile {
    /// At most this many of the latest usable deliveries are considered.
    public static let estimationWindow = 256

    /// Estimates a device's profile on `network` from its past deliveries (oldest first).
    ///
    /// Deliveries recorded on another network type are skipped (those without a network type
    /// are used). A completed network download (source `network`, `bytes > 0`, `download_ms > 0`,
    /// outcome attached, too_large or unsupported_format) is a sample `(bytes, download_ms)`.
    /// From the latest `estimationWindow` samples, in order of preference:
    /// 1. Theil-Sen line `download_ms = latency + bytes / throughput`: the slope is the median of
    ///    the slopes of all sample pairs whose sizes differ by at least half (the larger at least
    ///    1.5 times the smaller), at least 3 such pairs and a positive median required; the latency
    ///    is the median of `download_ms - slope * bytes`, at least 0. Robust to a minority of
    ///    outliers and separates latency from throughput when thumbnails and originals are mixed.
    /// 2. Latency from `typical(for: network)`; throughput the median of
    ///    `bytes / (download_ms - latency)`, the denominator at least `download_ms / 2`.
    /// 3. Without completed downloads but with timeouts (`bytes > 0`, `processing_ms > 0`): the
    ///    typical latency and the median of `bytes / processing_ms`, an upper bound on the
    ///    throughput that such a device actually had.
    /// 4. Otherwise `typical(for: network)`; `offline` always gives the offline profile.
    public static func estimate(from history: [DeliveredDetails], network: NetworkType) -> NetworkProfile {
        let typical = typical(for: network)
        guard network != .offline else { return typical }

        var bytes: [Double] = []
        var millis: [Double] = []
        var censoredRates: [Double] = []
        for delivery in history.reversed() where delivery.network == nil || delivery.network == network {
            let a = delivery.attachment
            guard let size = a.bytes, size > 0 else { continue }
            switch delivery.outcome {
            case .attached, .tooLarge, .unsupportedFormat:
                guard a.source == .network, let ms = a.downloadMS, ms > 0, bytes.count < estimationWindow
                else { continue }
                bytes.append(Double(size))
                millis.append(Double(ms))
            case .timeout:
                if delivery.processingMS > 0, censoredRates.count < estimationWindow {
                    censoredRates.append(Double(size) * 1000 / Double(delivery.processingMS))
                }
            case .downloadFailed, .notRequested:
                continue
            }
        }

        if let line = theilSen(bytes: bytes, millis: millis) {
            return NetworkProfile(throughputBytesPerSecond: 1000 / line.slope, latencyMS: line.intercept)
        }
        if !bytes.isEmpty {
            var rates: [Double] = []
            rates.reserveCapacity(bytes.count)
            for i in bytes.indices {
                let transfer = max(millis[i] - typical.latencyMS, millis[i] / 2)
                rates.append(bytes[i] * 1000 / transfer)
            }
            return NetworkProfile(throughputBytesPerSecond: median(&rates), latencyMS: typical.latencyMS)
        }
        if !censoredRates.isEmpty {
            return NetworkProfile(throughputBytesPerSecond: median(&censoredRates), latencyMS: typical.latencyMS)
        }
        return typical
    }

    /// Slope (ms per byte) and intercept (ms) of the Theil-Sen line, or nil (see `estimate`).
    static func theilSen(bytes: [Double], millis: [Double]) -> (slope: Double, intercept: Double)? {
        var slopes: [Double] = []
        for i in bytes.indices {
            for j in bytes.indices where j > i {
                let (small, large) = bytes[i] < bytes[j] ? (i, j) : (j, i)
                guard bytes[large] >= 1.5 * bytes[small] else { continue }
                slopes.append((millis[large] - millis[small]) / (bytes[large] - bytes[small]))
            }
        }
        guard slopes.count >= 3 else { return nil }
        let slope = median(&slopes)
        guard slope > 0, slope.isFinite else { return nil }
        var residuals = bytes.indices.map { millis[$0] - slope * bytes[$0] }
        return (slope, max(0, median(&residuals)))
    }

    /// The median of a non-empty array (the mean of the middle two for an even count); sorts it.
    static func median(_ values: inout [Double]) -> Double {
        values.sort()
        let n = values.count
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2
    }
}
