/// One device's recorded deliveries, oldest first, from which the replay estimates its network.
///
/// Only the latest `limit` deliveries are kept: recent ones describe the network best, and
/// `NetworkProfile.estimate` compares every pair of samples, so its cost grows with the square of
/// the history. Estimates are remembered per network type until the history changes in a way the
/// estimate can see (a delivery with a byte count entering or leaving the window), because most
/// deliveries (text only, cache reads) never change it.
struct ReplayNetworkHistory: Sendable {
    let limit: Int
    private var deliveries: [DeliveredDetails] = []
    private var head = 0
    /// Incremented whenever the deliveries that `NetworkProfile.estimate` reads change.
    private var version = 0
    private var remembered: (network: NetworkType, version: Int, profile: NetworkProfile)?

    init(limit: Int) {
        precondition(limit > 0, "the history must hold at least one delivery")
        self.limit = limit
    }

    /// The profile `NetworkProfile.estimate` gives for the deliveries recorded so far.
    mutating func estimate(network: NetworkType) -> NetworkProfile {
        if let remembered, remembered.network == network, remembered.version == version {
            return remembered.profile
        }
        let profile = NetworkProfile.estimate(from: ordered, network: network)
        remembered = (network, version, profile)
        return profile
    }

    /// Appends a delivery that happened after every recorded one.
    mutating func record(_ delivery: DeliveredDetails) {
        if deliveries.count < limit {
            deliveries.append(delivery)
        } else {
            if Self.canInform(deliveries[head]) { version += 1 }
            deliveries[head] = delivery
            head = (head + 1) % limit
        }
        if Self.canInform(delivery) { version += 1 }
    }

    /// Oldest first.
    private var ordered: [DeliveredDetails] {
        head == 0 ? deliveries : Array(deliveries[head...] + deliveries[..<head])
    }

    /// `NetworkProfile.estimate` skips every delivery without a positive byte count.
    private static func canInform(_ delivery: DeliveredDetails) -> Bool {
        (delivery.attachment.bytes ?? 0) > 0
    }
}
