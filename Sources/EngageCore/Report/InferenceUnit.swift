/// What the intervals and p-values of a comparison take as independent units.
public enum InferenceUnit: String, Sendable, Hashable, CaseIterable {
    /// Devices: a device's notifications of a category are one cluster (delta method over
    /// devices, from the read model's device moments).
    case device
    /// Notifications, as if each came from its own device: no device moments for this
    /// comparison (a day range, an attachment kind, the crude total, app-defined actions).
    case notification
}

extension CategoryDeviceMoments {
    /// The device moments of `metric` when they describe exactly the notifications counted in
    /// `rich` and `plain` (the same successes and trials); nil otherwise, and for app-defined
    /// actions, whose moments the read model does not keep.
    func comparison(_ metric: ReportMetric, rich richCounts: PresentationCounts,
                    plain plainCounts: PresentationCounts) -> ClusteredProportionComparison? {
        guard case .engagement(let engagement) = metric,
              let rich = rich[engagement], let plain = plain[engagement],
              rich.trials == metric.trials(in: richCounts), rich.successes == metric.successes(in: richCounts),
              plain.trials == metric.trials(in: plainCounts), plain.successes == metric.successes(in: plainCounts)
        else { return nil }
        return ClusteredProportionComparison(variant: rich, control: plain, sharedDevices: shared[engagement])
    }
}
