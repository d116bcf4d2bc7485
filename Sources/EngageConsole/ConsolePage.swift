import EngageCore

/// A whole console page: the document, the stylesheet, the bar with the sections and the session,
/// an optional notice, and the page's own markup. Without a viewer (signed out), only the body.
public struct ConsolePage: Sendable {
    public enum Section: String, Sendable, CaseIterable {
        case report, telemetry, experiments, health

        var title: String {
            switch self {
            case .report: "Report"
            case .telemetry: "Extension"
            case .experiments: "Experiments"
            case .health: "Ingestion"
            }
        }

        var path: String {
            switch self {
            case .report: ConsolePath.report
            case .telemetry: ConsolePath.telemetry
            case .experiments: ConsolePath.experiments
            case .health: ConsolePath.health
            }
        }
    }

    /// A line above the page's content: what an action did, or why it could not.
    public struct Notice: Sendable, Equatable {
        public enum Kind: String, Sendable { case ok, error }
        public var kind: Kind
        public var text: String

        public init(_ kind: Kind, _ text: String) {
            self.kind = kind
            self.text = text
        }
    }

    public var title: String
    public var section: Section?
    public var viewer: ConsoleViewer?
    public var notice: Notice?
    /// The page's markup, already escaped.
    public var body: String

    public init(title: String, section: Section? = nil, viewer: ConsoleViewer? = nil, notice: Notice? = nil, body: String) {
        self.title = title
        self.section = section
        self.viewer = viewer
        self.notice = notice
        self.body = body
    }

    /// The Content-Security-Policy every console response carries: this stylesheet only, no script.
    public static var contentSecurityPolicy: String { ConsoleStyle.contentSecurityPolicy }

    public func render() -> String {
        var html = HTMLPage.opening(title: "\(title) · engage", stylesheet: ConsoleStyle.stylesheet, headElements: [
            "<meta name=\"color-scheme\" content=\"light dark\">",
            "<meta name=\"referrer\" content=\"no-referrer\">",
            "<link rel=\"icon\" href=\"data:,\">",
        ])
        html += "<header class=\"top\"><span class=\"brand\">engage</span>"
        if let viewer {
            html += navigation(viewer)
        }
        html += "</header>\n<main>\n"
        if let notice {
            html += "<p class=\"notice \(notice.kind.rawValue)\" role=\"status\">\(Markup.text(notice.text))</p>\n"
        }
        html += body
        html += "\n</main>\n<footer>engage console · pages are rendered by the server from the same models as "
            + "<code>engage report</code> and <code>engage experiment show</code></footer>\n</body>\n</html>\n"
        return html
    }

    private func navigation(_ viewer: ConsoleViewer) -> String {
        var html = "<nav class=\"sections\" aria-label=\"Sections\">"
        for section in Section.allCases {
            html += Markup.link(viewer.link(section.path), section.title, current: section == self.section)
        }
        html += "</nav><div class=\"session\">"
        if viewer.apps.count > 1 {
            html += "<form method=\"get\" action=\"\(Markup.text((section ?? .report).path))\"><label>app "
                + "<select name=\"app\">"
            for app in viewer.apps {
                html += "<option value=\"\(Markup.text(app.id))\"" + (app.id == viewer.app.id ? " selected" : "") + ">"
                    + Markup.text(app.id) + "</option>"
            }
            html += "</select></label><button class=\"secondary\" type=\"submit\">Show</button></form>"
        } else {
            html += "<span>app <b>\(Markup.text(viewer.app.id))</b></span>"
        }
        html += "<span>\(viewer.app.canAdminister ? "admin key" : "read key")</span>"
        html += Markup.link(ConsolePath.with(ConsolePath.login, [("add", "1")]), "add a key")
        html += "<form method=\"post\" action=\"\(ConsolePath.logout)\">" + Markup.hidden("csrf", viewer.formToken)
            + "<button class=\"secondary\" type=\"submit\">Sign out</button></form></div>"
        return html
    }
}
