import EngageCore

/// What the ingestion page shows: this process's rates and refusals (from its metrics) and how far
/// the projector has folded the log (from the database).
public struct IngestionHealth: Sendable {
    /// Events per second over a recent window, or over as much of it as has been observed (the
    /// process may be younger); nil before a second has been.
    public struct Rates: Sendable, Equatable {
        public var window: Int
        /// Seconds the rates are measured over: the window, or less.
        public var observed: Double?
        public var accepted: Double?
        public var duplicates: Double?
        public var rejected: Double?

        public init(window: Int, observed: Double?, accepted: Double?, duplicates: Double?, rejected: Double?) {
            self.window = window
            self.observed = observed
            self.accepted = accepted
            self.duplicates = duplicates
            self.rejected = rejected
        }
    }

    /// The projection's checkpoint row and what lies in the log past it.
    public struct Projector: Sendable, Equatable {
        /// True when this process's projector holds the lock, false when it stands by, nil when
        /// this process runs none.
        public var activeHere: Bool?
        public var eventsProcessed: Int
        public var checkpointUpdatedAt: Timestamp?
        /// Events in the log after the checkpoint (`engage_projector_lag_events`).
        public var lagEvents: Int
        /// How long the oldest of them has been in the log, 0 when none (`engage_projector_lag_seconds`).
        public var lagSeconds: Double

        public init(activeHere: Bool?, eventsProcessed: Int, checkpointUpdatedAt: Timestamp?, lagEvents: Int, lagSeconds: Double) {
            self.activeHere = activeHere
            self.eventsProcessed = eventsProcessed
            self.checkpointUpdatedAt = checkpointUpdatedAt
            self.lagEvents = lagEvents
            self.lagSeconds = lagSeconds
        }
    }

    public var rates: [Rates]
    /// Events accepted per second in each sampling interval, oldest first.
    public var acceptedHistory: [Double]
    public var sampleSeconds: Int
    public var accepted: Int
    public var duplicates: Int
    public var rejected: Int
    /// Requests to the ingestion route by HTTP status.
    public var requestsByStatus: [(status: Int, count: Int)]
    /// Rejected events by the field at fault (`event` for the event as a whole).
    public var rejectedByField: [(field: String, count: Int)]
    public var queueEvents: Int
    public var poolInUse: Int
    public var poolWaiting: Int
    public var connectionsOpen: Int
    /// Nil when the database could not be read.
    public var projector: Projector?

    public init(rates: [Rates], acceptedHistory: [Double], sampleSeconds: Int, accepted: Int, duplicates: Int, rejected: Int,
                requestsByStatus: [(status: Int, count: Int)], rejectedByField: [(field: String, count: Int)], queueEvents: Int,
                poolInUse: Int, poolWaiting: Int, connectionsOpen: Int, projector: Projector?) {
        self.rates = rates
        self.acceptedHistory = acceptedHistory
        self.sampleSeconds = sampleSeconds
        self.accepted = accepted
        self.duplicates = duplicates
        self.rejected = rejected
        self.requestsByStatus = requestsByStatus
        self.rejectedByField = rejectedByField
        self.queueEvents = queueEvents
        self.poolInUse = poolInUse
        self.poolWaiting = poolWaiting
        self.connectionsOpen = connectionsOpen
        self.projector = projector
    }
}

/// The ingestion page.
public struct HealthView: Sendable {
    public var health: IngestionHealth
    public var viewer: ConsoleViewer

    public init(health: IngestionHealth, viewer: ConsoleViewer) {
        self.health = health
        self.viewer = viewer
    }

    /// What a refused request's status means on the ingestion route.
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "accepted"
        case 400: "malformed body or no valid event"
        case 401: "missing, unknown or revoked key"
        case 403: "key of another role"
        case 413: "too large"
        case 415: "unsupported content type or encoding"
        case 429: "rate limited or queue full"
        case 503: "database unavailable or shutting down"
        default: "status \(status)"
        }
    }

    public func page() -> ConsolePage {
        let h = health
        var html = "<h1>Ingestion</h1><p class=\"small muted\">Rates and refusals are this process's (its metrics, as "
            + "<code>/metrics</code> serves them); the projector's checkpoint is the database's.</p>"
        html += "<section class=\"card\"><h2>Events per second</h2><div class=\"figures\">"
        for rates in h.rates {
            html += "<div class=\"figure\" data-window=\"\(rates.window)\" data-accepted=\"\(Markup.number(rates.accepted))\">"
                + "<span class=\"small muted\">last \(Self.duration(min(rates.observed ?? Double(rates.window), Double(rates.window))))</span>"
                + "<b>\(Markup.text(Self.rate(rates.accepted)))/s</b><span class=\"small\">duplicates "
                + "\(Markup.text(Self.rate(rates.duplicates)))/s · rejected \(Markup.text(Self.rate(rates.rejected)))/s</span></div>"
        }
        html += "<div class=\"figure\"><span class=\"small muted\">since this process started</span><b data-total-accepted=\"\(h.accepted)\">"
            + "\(h.accepted)</b><span class=\"small\">accepted · \(h.duplicates) duplicates · \(h.rejected) rejected</span></div></div>"
        html += Sparkline(title: "Events accepted per second, every \(h.sampleSeconds) s over the last hour",
                          values: h.acceptedHistory).markup
        html += "</section>"

        html += "<div class=\"grid\"><section class=\"card\"><h2>Requests to /v1/events</h2><table class=\"statuses\"><thead><tr>"
            + "<th>status</th><th class=\"left\">meaning</th><th>requests</th></tr></thead><tbody>"
        for (status, count) in h.requestsByStatus {
            html += "<tr data-status=\"\(status)\" data-count=\"\(count)\"><td>\(status)</td>"
                + "<td class=\"left\">\(Markup.text(Self.reason(status)))</td><td>\(count)</td></tr>"
        }
        if h.requestsByStatus.isEmpty { html += "<tr><td colspan=\"3\">none yet</td></tr>" }
        html += "</tbody></table></section><section class=\"card\"><h2>Rejected events by field</h2>"
            + "<table class=\"rejections\"><thead><tr><th>field</th><th>events</th></tr></thead><tbody>"
        for (field, count) in h.rejectedByField {
            html += "<tr data-field=\"\(Markup.text(field))\" data-count=\"\(count)\">" + Markup.cells([Markup.text(field), String(count)]) + "</tr>"
        }
        if h.rejectedByField.isEmpty { html += "<tr><td colspan=\"2\">none</td></tr>" }
        html += "</tbody></table></section></div>"

        html += "<div class=\"grid\"><section class=\"card\"><h2>Projector</h2>"
        if let projector = h.projector {
            let facts: [(String, String)] = [
                ("in this process", projector.activeHere.map { $0 ? "active" : "standing by" } ?? "not run here"),
                ("events folded", String(projector.eventsProcessed)),
                ("lag: events waiting", String(projector.lagEvents)),
                ("lag: oldest waiting for", Self.duration(projector.lagSeconds)),
                ("checkpoint moved", projector.checkpointUpdatedAt?.rfc3339 ?? "never"),
            ]
            html += "<dl class=\"facts\" data-lag-events=\"\(projector.lagEvents)\" data-lag-seconds=\"\(Markup.number(projector.lagSeconds))\">"
                + facts.map { "<dt>\(Markup.text($0.0))</dt><dd>\(Markup.text($0.1))</dd>" }.joined() + "</dl>"
            html += "<p class=\"small muted\">The report is as current as the checkpoint: events waiting are not in it yet. "
                + "The lag is what <code>/metrics</code> shows as <code>engage_projector_lag_events</code> and "
                + "<code>engage_projector_lag_seconds</code>.</p>"
        } else {
            html += "<p>The database could not be read.</p>"
        }
        html += "</section><section class=\"card\"><h2>This process</h2><dl class=\"facts\">"
        let facts: [(String, String)] = [
            ("events waiting for commit", String(h.queueEvents)), ("PostgreSQL connections in use", String(h.poolInUse)),
            ("tasks waiting for a connection", String(h.poolWaiting)), ("HTTP connections open", String(h.connectionsOpen)),
        ]
        html += facts.map { "<dt>\(Markup.text($0.0))</dt><dd>\(Markup.text($0.1))</dd>" }.joined() + "</dl></section></div>"
        return ConsolePage(title: "Ingestion", section: .health, viewer: viewer, body: html)
    }

    static func rate(_ value: Double?) -> String {
        guard let value else { return ReportText.missing }
        return ReportText.fixed(value, value < 10 ? 1 : 0)
    }

    /// `45 s`, `12 min`, `3.5 h`, `2.0 d`.
    static func duration(_ seconds: Double) -> String {
        if seconds < 120 { return ReportText.fixed(seconds, 0) + " s" }
        if seconds < 7_200 { return ReportText.fixed(seconds / 60, 0) + " min" }
        if seconds < 172_800 { return ReportText.fixed(seconds / 3_600, 1) + " h" }
        return ReportText.fixed(seconds / 86_400, 1) + " d"
    }
}

/// A line of values over time, from zero to the largest.
struct Sparkline {
    var title: String
    var values: [Double]

    private let layout = ChartLayout.consoleSparkline

    var markup: String {
        let (width, height) = (layout.plotWidth, layout.plotBottom(rows: 1))
        var canvas = SVGCanvas(width: layout.width, height: layout.height(rows: 1), label: title, cssClass: "chart")
        canvas.line(x1: 0, y1: height, x2: width, y2: height, .cssClass("axis"))
        guard values.count > 1 else {
            canvas.text("collecting: a point every interval", x: 4, y: height - 6, .cssClass("muted"))
            return canvas.markup
        }
        let top = max(values.max() ?? 0, 1)
        let step = width / Double(values.count - 1)
        canvas.polyline(values.enumerated().map { (Double($0.offset) * step, height - $0.element / top * (height - 6)) })
        canvas.text("max \(HealthView.rate(values.max()))/s", x: 2, y: height + 12, .cssClass("muted"))
        canvas.text("now", x: width, y: height + 12, anchor: .end, .cssClass("muted"))
        return canvas.markup
    }
}
