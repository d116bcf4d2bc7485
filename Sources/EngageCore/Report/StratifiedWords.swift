/// The adjusted answer in words, the same in every rendering: one headline sentence per metric,
/// and the warning owed when the crude total points elsewhere (Simpson's paradox).
extension StratifiedMetricSummary {
    /// "Adjusted for category, rich notifications are expanded 1.06x as often as plain ones
    /// [0.96, 1.17], not significant (p = 0.277); categories disagree: ..."
    public var headline: String {
        let adjusted = acrossApps ? "Adjusted for app and category" : "Adjusted for category"
        guard let riskRatio else {
            let text = adjusted + ", \(metric.label): " + (unavailable ?? "not enough data") + "."
            return homogeneityExcludedWords.map { text + " " + $0 } ?? text
        }
        var text = adjusted + ", rich notifications \(verb) " + Self.ratio(riskRatio.estimate)
            + " as often as plain ones " + Self.interval(riskRatio.interval) + ", "
            + (riskRatio.isSignificant ? "significant" : "not significant")
            + " (p \(Self.pText(riskRatio.pValue)); \(categories.count) " + (acrossApps ? "app " : "")
            + (categories.count == 1 ? "category" : "categories") + unitWords + ")"
        if let words = categoryWords { text += "; " + words }
        text += "."
        if smallSample { text += " " + Self.smallSampleWords }
        if let warning = crudeWarning { text += " " + warning }
        if !excluded.isEmpty { text += " " + excludedWords }
        if let words = homogeneityExcludedWords { text += " " + words }
        return text
    }

    /// "; devices as the unit, design effect 1.52" (of the risk ratio, whose interval the
    /// sentence gives: its square root is the factor on that interval's width), or
    /// "; notifications as the unit", said as plainly: a device's notifications then count as
    /// independent, and the interval is too narrow when devices got several (a day range, or
    /// device counts not rebuilt since an upgrade: docs/report.md), which the table and the page
    /// show nowhere else.
    var unitWords: String {
        guard unit == .device else { return "; notifications as the unit" }
        return "; devices as the unit"
            + (designEffect.map { ", design effect " + ReportFormat.fixed($0.riskRatio, 2) } ?? "")
    }

    /// "categories disagree (Cochran's Q p = 0.012): promo_sale 0.89x [0.71, 1.11]", or that no
    /// disagreement shows, naming categories that point the other way; nil with one category.
    public var categoryWords: String? {
        guard let homogeneity else { return nil }
        let q = "Cochran's Q p \(Self.pText(homogeneity.test.pValue))"
        if categoriesDisagree {
            let drivers = disagreeing + unboundedRatios
            let named = drivers.isEmpty ? pointingTheOtherWay : drivers
            return "categories disagree (\(q))" + (named.isEmpty ? "" : ": " + describe(named))
        }
        let other = pointingTheOtherWay
        return "no clear disagreement between categories (\(q))"
            + (other.isEmpty ? "" : ", though " + describe(other) + " "
               + (other.count == 1 ? "points" : "point") + " the other way")
    }

    /// Set when crude and adjusted differ in direction or significance: "The crude total, which
    /// pools categories, says 0.57x [0.53, 0.61], significant: it points the other way
    /// (Simpson's paradox: the categories' mix differs between rich and plain); trust the adjusted figure."
    public var crudeWarning: String? {
        guard let crudeDisagreement, let crude else { return nil }
        var differences: [String] = []
        if crudeDisagreement.direction { differences.append("points the other way") }
        if crudeDisagreement.significance {
            differences.append(crude.isSignificant ? "is significant where the adjusted figure is not"
                                                   : "is not significant where the adjusted figure is")
        }
        return "The crude total, which pools categories, says " + Self.ratio(crude.estimate) + " "
            + Self.interval(crude.interval) + ": it " + differences.joined(separator: " and ")
            + " (" + crudeDisagreementCause + "); trust the adjusted figure."
    }

    /// Why crude and adjusted differ, said only as far as the counts show it. Opposite directions
    /// come from the categories' mix alone (the estimates do not depend on the unit): Simpson's
    /// paradox. A difference in significance alone is laid on the mix only where rich and plain
    /// displays do spread over the categories differently (`mixDiffers`); where they do not, only
    /// the intervals differ: with the device as the adjusted figure's unit, a crude figure
    /// significant where the adjusted one is not counts every notification as independent
    /// (narrower), and otherwise the crude interval takes in the categories' differences that the
    /// adjusted one compares within.
    var crudeDisagreementCause: String {
        let mix = "rich and plain notifications come from different mixes of categories"
        if crudeDisagreement?.direction == true { return "Simpson's paradox: " + mix }
        let crudeMoreSignificant = crude?.isSignificant == true
        let independence = "it counts every notification as independent, where the adjusted figure counts each device once"
        if mixDiffers {
            if unit == .device && crudeMoreSignificant { return independence + ", and " + mix }
            return "Simpson's paradox: " + mix
        }
        if unit == .device && crudeMoreSignificant { return independence }
        return "rich and plain notifications come from the same mix of categories; only the intervals differ, the crude "
            + "one pooling categories whose own rates differ, the adjusted one comparing within each"
    }

    /// Whether rich and plain displays spread over the categories differently: always where the
    /// crude total holds a category left out for having rich or plain displays only; otherwise
    /// Pearson's chi-square test of independence of presentation and category on the compared
    /// categories' displays, below `EngagementReport.alpha`. The same shares everywhere make the
    /// crude and adjusted estimates equal, whatever the categories' rates.
    var mixDiffers: Bool {
        if poolsALeftOutCategory { return true }
        let test = IndependenceTest.twoRows(categories.map { Double($0.rich.trials) }, categories.map { Double($0.plain.trials) })
        return (test?.pValue).map { $0 < EngagementReport.alpha } ?? false
    }

    /// Said after the figures when `smallSample`: significant or not, they rest on too little.
    public static let smallSampleWords = "Small sample: a side has fewer than 30 displayed notifications (with the "
        + "device as the unit, fewer than 30 devices) or fewer than 5 successes or failures over the categories "
        + "compared, so these figures are rough."

    /// "Excluded: news (no plain displays), promo (no rich displays)."
    public var excludedWords: String {
        "Excluded: " + excluded.map { $0.name + " (" + Self.reasonText($0.reason) + ")" }.joined(separator: ", ") + "."
    }

    /// "Left out of Cochran's Q: promo (a side with no successes or only successes)."; nil when
    /// the check leaves no compared category out.
    public var homogeneityExcludedWords: String? {
        guard !homogeneityExcluded.isEmpty else { return nil }
        return "Left out of Cochran's Q: "
            + homogeneityExcluded.map { $0.name + " (" + Self.reasonText($0.reason) + ")" }.joined(separator: ", ") + "."
    }

    static func reasonText(_ reason: ExcludedStratum.Reason) -> String {
        switch reason {
        case .noTrials: "no displays"
        case .noVariantTrials: "no rich displays"
        case .noControlTrials: "no plain displays"
        case .degenerateMargins: "every notification a success or none"
        case .zeroCell: "a side with no successes or only successes"
        }
    }

    /// "promo_sale 0.89x [0.71, 1.11], news 1.40x [1.10, 1.80]".
    private func describe(_ names: [String]) -> String {
        names.map { name in
            guard let category = categories.first(where: { $0.name == name }) else { return name }
            guard let ratio = category.ratio else {
                return name + " (no plain successes, \(category.rich.successes) of \(category.rich.trials) rich)"
            }
            return name + " " + Self.ratio(ratio.estimate) + " " + Self.interval(ratio.interval)
        }.joined(separator: ", ")
    }

    /// "are expanded", "are acted on", "lead to action “later”".
    var verb: String {
        switch metric {
        case .engagement(let metric):
            switch metric {
            case .expansion: "are expanded"
            case .action: "are acted on"
            case .open: "are opened"
            case .reply: "are replied to"
            case .dismiss: "are dismissed"
            case .richDisplay: "are displayed rich"
            }
        case .customAction(let id): "lead to action “\(id)”"
        }
    }

    /// `1.06x`.
    /// `1.06x`; a ratio that would round to 1.00 without being 1 gets more places (`1.004x`), as
    /// the interval's bounds do: "1.00x as often ..., significant" would read as no effect.
    static func ratio(_ value: Double) -> String { ReportFormat.bound(value, 2, noEffect: 1) + "x" }

    /// `[0.96, 1.17]`; a bound that would round to 1.00 without being 1 gets more places
    /// (`[1.004, 1.23]`), so that the interval never reads as touching "no effect" beside
    /// "significant".
    static func interval(_ interval: ConfidenceInterval) -> String {
        "[" + ReportFormat.bound(interval.lower, 2, noEffect: 1) + ", " + ReportFormat.bound(interval.upper, 2, noEffect: 1) + "]"
    }

    /// `= 0.277` or `< 0.001`; `= 0.0496` rather than `= 0.050` beside "significant".
    static func pText(_ p: Double) -> String {
        p < 0.001 ? "< 0.001" : "= " + ReportFormat.bound(p, 3, noEffect: EngagementReport.alpha)
    }
}
