/// The tables of the engagement read model: the live ones readers use, or the shadow copies a
/// rebuild fills before swapping them in. Names are program constants, never input.
public struct ReadModelTables: Sendable, Equatable {
    public var states: String
    public var engagement: String
    public var actions: String
    public var telemetry: String
    /// Per-device counts and the per-category sums over devices (`DeviceMomentStore`).
    public var devices: String
    public var deviceMoments: String
    /// The sums over devices across two categories (`DevicePairMomentStore`).
    public var devicePairMoments: String

    public static let live = ReadModelTables(states: "notification_states", engagement: "engagement_daily",
                                             actions: "engagement_actions_daily", telemetry: "extension_telemetry_daily",
                                             devices: "engagement_devices", deviceMoments: "engagement_device_moments",
                                             devicePairMoments: "engagement_device_pair_moments")
    public static let rebuild = ReadModelTables(states: "notification_states_rebuild", engagement: "engagement_daily_rebuild",
                                                actions: "engagement_actions_daily_rebuild", telemetry: "extension_telemetry_daily_rebuild",
                                                devices: "engagement_devices_rebuild", deviceMoments: "engagement_device_moments_rebuild",
                                                devicePairMoments: "engagement_device_pair_moments_rebuild")

    public var all: [String] { [states, engagement, actions, telemetry, devices, deviceMoments, devicePairMoments] }
}
