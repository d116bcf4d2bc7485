import EngageCore

/// One analysis run as the experiment pages list it: its place in `experiment_runs` and, once done,
/// what it found.
public struct ExperimentRunSummary: Sendable, Equatable {
    public var id: Int64
    public var scheduledFor: Timestamp
    public var isManual: Bool
    /// `pending`, `running`, `done` or `failed`.
    public var status: String
    public var error: String?
    /// Nil until done (or when the stored result cannot be read).
    public var look: ExperimentLook?

    public init(id: Int64, scheduledFor: Timestamp, isManual: Bool, status: String, error: String?, result: [UInt8]?) {
        self.id = id
        self.scheduledFor = scheduledFor
        self.isManual = isManual
        self.status = status
        self.error = error
        look = result.flatMap { ExperimentLook(runID: id, scheduledFor: scheduledFor, result: $0) }
    }
}

/// The experiments page: the app's experiments with their status and latest decision.
public struct ExperimentListView: Sendable {
    public struct Entry: Sendable {
        public var definition: ExperimentDefinition
        public var createdAt: Timestamp
        /// The newest finished analysis, if any.
        public var latest: ExperimentLook?

        public init(definition: ExperimentDefinition, createdAt: Timestamp, latest: ExperimentLook?) {
            self.definition = definition
            self.createdAt = createdAt
            self.latest = latest
        }
    }

    public var entries: [Entry]
    /// Experiments whose stored definition this engage cannot read: named, never hidden.
    public var unreadable: [String]
    public var viewer: ConsoleViewer

    public init(entries: [Entry], unreadable: [String] = [], viewer: ConsoleViewer) {
        self.entries = entries
        self.unreadable = unreadable
        self.viewer = viewer
    }

    public func page() -> ConsolePage {
        var html = "<h1>Experiments</h1>"
        if !unreadable.isEmpty {
            html += "<section class=\"card\" data-unreadable><p>Not shown: \(Markup.text(unreadable.joined(separator: ", "))): "
                + "their stored definitions cannot be read by this engage (<code>engage experiment show ID</code> says why); "
                + "they assign no one and are not analysed.</p></section>"
        }
        guard !entries.isEmpty else {
            html += "<section class=\"card\"><p>No experiment for app \(Markup.text(viewer.app.id)) yet. Create one with "
                + "<code>engage experiment create --file definition.json</code> (docs/experiments.md).</p></section>"
            return ConsolePage(title: "Experiments", section: .experiments, viewer: viewer, body: html)
        }
        html += "<section class=\"card\"><div class=\"scroll\"><table class=\"experiments\"><thead><tr><th>experiment</th>"
            + "<th class=\"left\">status</th><th class=\"left\">arms</th><th class=\"left\">primary metric</th><th>looks</th>"
            + "<th class=\"left\">latest decision</th><th>analysed</th></tr></thead><tbody>"
        for entry in entries {
            let definition = entry.definition
            html += "<tr data-experiment=\"\(Markup.text(definition.id))\">"
                + "<td>\(Markup.link(viewer.link(ConsolePath.experiment(definition.id)), definition.id))</td>"
                + "<td class=\"left\">\(ExperimentView.badge(definition.status))</td>"
                + "<td class=\"wrap\">\(Markup.text(ExperimentView.arms(definition)))</td>"
                + "<td class=\"left\">\(Markup.text(definition.primaryMetric.rawValue))</td>"
                + "<td>\(entry.latest.map { String($0.look) } ?? "0")</td>"
                + "<td class=\"left\">\(Markup.text(entry.latest?.decisionText ?? "none yet"))</td>"
                + "<td>\(Markup.text(entry.latest?.analyzedAt ?? ReportText.missing))</td></tr>"
        }
        html += "</tbody></table></div></section>"
        return ConsolePage(title: "Experiments", section: .experiments, viewer: viewer, body: html)
    }
}

/// One experiment: its definition, start and stop for an admin key, the latest decision with its
/// rationale, the sample ratio check, the lift of each treatment per look, and the lifecycle the
/// event log holds.
public struct ExperimentView: Sendable {
    public var definition: ExperimentDefinition
    /// Newest scheduled first, as `engage experiment runs` lists them.
    public var runs: [ExperimentRunSummary]
    public var lifecycle: [ExperimentSummaryText.LifecycleLine]
    public var viewer: ConsoleViewer

    public init(definition: ExperimentDefinition, runs: [ExperimentRunSummary], lifecycle: [ExperimentSummaryText.LifecycleLine],
                viewer: ConsoleViewer) {
        self.definition = definition
        self.runs = runs
        self.lifecycle = lifecycle
        self.viewer = viewer
    }

    /// The finished analyses, oldest first.
    var looks: [ExperimentLook] { runs.reversed().compactMap(\.look) }

    public func page(notice: ConsolePage.Notice? = nil) -> ConsolePage {
        let d = definition
        var html = "<h1>\(Markup.text(d.id)) \(Self.badge(d.status))</h1>"
        html += definitionSection() + actions()
        let looks = self.looks
        if let latest = looks.last {
            html += latestSection(latest)
            for arm in d.treatments {
                html += LiftPerLookView(looks: looks, arm: arm.name, metric: d.primaryMetric.rawValue, alpha: d.alpha).markup
            }
        } else {
            html += "<section class=\"card\"><h2>Latest decision</h2><p>No finished analysis yet. The scheduler analyses a "
                + "running experiment on its schedule (\(Markup.text(d.schedule.expression)), UTC); "
                + "<code>engage experiment run \(Markup.text(d.id))</code> analyses it now.</p></section>"
        }
        html += runsSection() + lifecycleSection()
        return ConsolePage(title: d.id, section: .experiments, viewer: viewer, notice: notice, body: html)
    }

    static func badge(_ status: ExperimentStatus) -> String {
        "<span class=\"badge \(status.rawValue)\">\(status.rawValue)</span>"
    }

    static func arms(_ definition: ExperimentDefinition) -> String {
        definition.arms.map { arm in
            "\(arm.name) = \(arm.strategy.rawValue) \(ReportText.percent(arm.weight, decimals: 0))" + (arm.isControl ? " (control)" : "")
        }.joined(separator: ", ")
    }

    private func definitionSection() -> String {
        let d = definition
        let guardrails = d.guardrails.map { "\($0.metric.rawValue) \($0.direction.rawValue)" }
        let facts: [(String, String)] = [
            ("app", d.appID), ("arms", Self.arms(d)),
            ("categories", d.categories.isEmpty ? "all" : d.categories.joined(separator: ", ")),
            ("primary metric", "\(d.primaryMetric.rawValue) (\(d.primaryMetric.definition))"),
            ("guardrails", guardrails.isEmpty ? "none" : guardrails.joined(separator: ", ")),
            ("alpha", ReportText.fixed(d.alpha, 3)), ("schedule", d.schedule.expression + " (UTC)"),
            ("start", d.startAt?.rfc3339 ?? ReportText.missing), ("stop", d.stopAt?.rfc3339 ?? ReportText.missing),
        ]
        return "<section class=\"card\"><h2>Definition</h2><dl class=\"facts\">"
            + facts.map { "<dt>\(Markup.text($0.0))</dt><dd>\(Markup.text($0.1))</dd>" }.joined() + "</dl></section>"
    }

    /// Start and stop, as forms that carry the page's CSRF token; only an admin key may use them.
    private func actions() -> String {
        let status = definition.status
        guard status != .stopped else { return "" }
        guard viewer.app.canAdminister else {
            return "<p class=\"small muted\">Starting and stopping an experiment takes an admin key of app "
                + "\(Markup.text(definition.appID)): \(Markup.link(ConsolePath.with(ConsolePath.login, [("add", "1")]), "add one")).</p>"
        }
        var html = "<div class=\"actions\">"
        if status == .draft {
            html += form(ConsolePath.start(definition.id), button: "Start experiment", style: "")
        }
        html += form(ConsolePath.stop(definition.id), button: "Stop experiment", style: " class=\"danger\"")
        return html + "</div>"
    }

    private func form(_ action: String, button: String, style: String) -> String {
        "<form method=\"post\" action=\"\(Markup.text(viewer.link(action)))\">" + Markup.hidden("csrf", viewer.formToken)
            + "<button type=\"submit\"\(style)>\(button)</button></form>"
    }

    private func latestSection(_ look: ExperimentLook) -> String {
        var html = "<section class=\"card\" id=\"latest\"><h2>Latest decision: \(Markup.text(look.decisionText))</h2>"
        html += "<p>\(Markup.text(look.rationale))</p><p class=\"small muted\">look \(look.look), analysed "
            + "\(Markup.text(look.analyzedAt)), run \(look.runID)</p>"
        html += "<h3>Sample ratio check</h3><p data-srm-p=\"\(Markup.number(look.sampleRatioPValue))\">"
        if look.sampleRatioMismatch {
            html += "<span class=\"badge bad\">mismatch</span> "
        }
        html += "p = \(Markup.text(ReportText.pValue(look.sampleRatioPValue, alpha: look.sampleRatioThreshold ?? 0.001))) against the threshold "
            + "\(Markup.text(look.sampleRatioThreshold.map { ReportText.fixed($0, 3) } ?? ReportText.missing)): "
            + (look.sampleRatioMismatch ? "the arms' device counts do not match their weights; the assignment is suspect."
                : Self.belowThreshold(look) ? "not trusted yet: the arms expecting fewer than 5 devices are pooled, "
                    + "and the test over cells that size finds no mismatch (or has too few cells to test)."
                : "the arms' device counts match their weights.") + "</p>"
        let devices = look.arms.reduce(0) { $0.addingSaturated($1.devices) }
        html += "<div class=\"scroll\"><table><thead><tr><th>arm</th><th>strategy</th><th>weight</th><th>devices</th>"
            + "<th>expected</th><th>notifications</th><th>displayed</th><th>rich displayed</th></tr></thead><tbody>"
        for arm in look.arms {
            html += "<tr data-arm=\"\(Markup.text(arm.name))\" data-devices=\"\(arm.devices)\">"
                + Markup.cells([Markup.text(arm.name + (arm.isControl && arm.name != "control" ? " (control)" : "")), Markup.text(arm.strategy),
                                ReportText.percent(arm.weight, decimals: 0), String(arm.devices),
                                ReportText.fixed(arm.weight * Double(devices), 0), String(arm.notifications),
                                String(arm.displayed), String(arm.richDisplayed)]) + "</tr>"
        }
        html += "</tbody></table></div><h3>Every metric, treatment against control</h3>"
        html += "<div class=\"scroll\"><table><thead><tr><th>arm · metric</th><th class=\"left\">role</th><th>control</th><th>treatment</th>"
            + "<th>relative lift</th><th>fixed interval</th><th>sequential</th><th>p (fixed)</th><th>chance to win</th>"
            + "<th>decides: sequential, log ratio</th><th>CUPED variance reduction</th></tr>"
            + "</thead><tbody>"
        for comparison in look.comparisons {
            let relative = comparison.relative
            let role = comparison.role + (comparison.direction.map { " (\($0.split(separator: "_").joined(separator: " ")))" } ?? "")
                + (comparison.guardrailViolated ? ", violated" : comparison.guardrailUntestedAndWorse ? ", worse, untestable" : "")
            html += "<tr data-arm=\"\(Markup.text(comparison.arm))\" data-metric=\"\(Markup.text(comparison.metric))\" "
                + "data-relative=\"\(Markup.number(relative?.estimate))\">"
                + "<td>\(Markup.text(comparison.arm + " · " + comparison.metric))</td><td class=\"left\">\(Markup.text(role))</td>"
                + Markup.cells([
                    Markup.text(Self.rate(comparison.control)), Markup.text(Self.rate(comparison.variant)),
                    Markup.text(relative.map { ReportText.signed($0.estimate * 100, 1) + "%" }
                                ?? (comparison.unavailable.map { "not enough data (\($0))" } ?? ReportText.missing)),
                    Markup.text(Self.interval(relative?.fixed, level: comparison.confidence)),
                    Markup.text(Self.interval(relative?.sequential)),
                    Markup.text(ReportText.pValue(relative?.fixed?.pValue, alpha: definition.alpha)
                                + Self.correction(comparison.pValueCorrection)),
                    Markup.text(ReportText.percent(relative?.chanceToWin)),
                    Markup.text(Self.interval(comparison.logRatio?.sequential)),
                    Markup.text(ReportText.percent(comparison.varianceReduction)),
                ]) + "</tr>"
        }
        return html + "</tbody></table></div></section>"
    }

    /// " (bonferroni x2)" beside a p-value adjusted with its interval; nothing when unadjusted.
    static func correction(_ label: String?) -> String {
        guard let label, label != "none" else { return "" }
        return " (" + label + ")"
    }

    static func rate(_ rate: ExperimentLook.Rate) -> String {
        ReportText.percent(rate.rate) + " (\(rate.successes)/\(rate.trials))"
    }

    /// A p-value below the threshold that is no mismatch: the decision's test pools the arms that
    /// expect fewer than 5 devices (`SampleRatioMismatch.decisionPValue`), and that test did not
    /// confirm it. "Match their weights" beside such a p-value would contradict it.
    static func belowThreshold(_ look: ExperimentLook) -> Bool {
        guard let p = look.sampleRatioPValue, let threshold = look.sampleRatioThreshold else { return false }
        return p < threshold
    }

    /// `[-3.1%, +12.0%]`, and with a level `[-3.1%, +12.0%] at 97.5%`: the primary metric's
    /// intervals are at `1 - alpha / treatments`, so no single level fits a column header.
    static func interval(_ test: ExperimentLook.Test?, level: Double? = nil) -> String {
        guard let test else { return ReportText.missing }
        // A bound near 0 keeps the decimals that tell it from 0: it decides.
        let text = "[" + ReportText.signedBound(test.lower * 100, 1, noEffect: 0) + "%, "
            + ReportText.signedBound(test.upper * 100, 1, noEffect: 0) + "%]"
        guard let level else { return text }
        return text + " at " + levelText(level)
    }

    /// A level as a percentage with the fewest decimals that keep it within a hundredth of its
    /// distance from 100%: `95%`, `97.5%`, `98.33%` (alpha 0.05 over three), `99.995%`. One
    /// decimal for all showed 99.99% and 99.995% as "100%", a level no interval has.
    static func levelText(_ level: Double) -> String {
        let percent = level * 100
        let tolerance = (100 - percent) / 100
        var decimals = 0
        while decimals < 12, abs(rounded(percent, decimals) - percent) > tolerance { decimals += 1 }
        return ReportText.fixed(percent, decimals) + "%"
    }

    private static func rounded(_ value: Double, _ decimals: Int) -> Double {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        return (value * scale).rounded() / scale
    }

    private func runsSection() -> String {
        guard !runs.isEmpty else { return "" }
        var html = "<section class=\"card\"><h2>Analysis runs</h2><details><summary>\(runs.count) run(s)</summary>"
            + "<div class=\"scroll\"><table><thead><tr><th>run</th><th>scheduled for</th><th>trigger</th><th>status</th>"
            + "<th>decision</th><th>error</th></tr></thead><tbody>"
        for run in runs {
            html += "<tr>" + Markup.cells([String(run.id), Markup.text(run.scheduledFor.rfc3339), run.isManual ? "manual" : "schedule",
                                           Markup.text(run.status), Markup.text(run.look?.decisionText ?? ReportText.missing),
                                           Markup.text(run.error ?? "")]) + "</tr>"
        }
        return html + "</tbody></table></div></details></section>"
    }

    private func lifecycleSection() -> String {
        var html = "<section class=\"card\"><h2>Lifecycle</h2><p class=\"small muted\">From the event log.</p><ol class=\"lifecycle\">"
        for entry in lifecycle {
            html += "<li><b>\(Markup.text(entry.action))</b> \(Markup.text(entry.at.rfc3339))"
                + (entry.reason.map { ": " + Markup.text($0) } ?? "") + "</li>"
        }
        if lifecycle.isEmpty { html += "<li>nothing logged</li>" }
        return html + "</ol></section>"
    }
}
