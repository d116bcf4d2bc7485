/// The sign-in form, and the pages that say why a request was refused. A refused page shows the
/// form and nothing of the data it would have shown.
public struct LoginView: Sendable {
    /// Where to go once signed in (a console path).
    public var next: String
    /// The value of the browser's login cookie, repeated in the form (double submit).
    public var loginToken: String
    /// Why the form is shown: the key was refused, the session is over, ...
    public var message: String?
    /// True when keys are held already and this one is added beside them.
    public var adding: Bool

    public init(next: String, loginToken: String, message: String? = nil, adding: Bool = false) {
        self.next = next
        self.loginToken = loginToken
        self.message = message
        self.adding = adding
    }

    public func page() -> ConsolePage {
        var html = "<section class=\"card login\"><h1>\(adding ? "Add a key" : "Sign in to engage")</h1>"
        if let message {
            html += "<p class=\"notice error\" role=\"alert\">\(Markup.text(message))</p>"
        }
        html += "<form method=\"post\" action=\"\(ConsolePath.login)\">" + Markup.hidden("csrf", loginToken)
            + Markup.hidden("next", next)
            + "<p><label for=\"key\">API key of your app (a read key, or an admin key to start and stop experiments)</label></p>"
            + "<p><input id=\"key\" name=\"key\" type=\"password\" autocomplete=\"off\" required "
            + "placeholder=\"egk_…\" spellcheck=\"false\"></p>"
            + "<p><button type=\"submit\">\(adding ? "Add key" : "Sign in")</button></p></form>"
        html += "<p class=\"small muted\">The key is kept in a cookie of this browser that pages cannot read (HttpOnly) and "
            + "that is sent to this server only; signing out removes it. Keys come from <code>engage keys create --app APP "
            + "--role read</code>.</p></section>"
        return ConsolePage(title: adding ? "Add a key" : "Sign in", body: html)
    }
}

/// A page that says what went wrong, for the signed-in reader (unknown experiment, a key that may
/// not do this, the database unreachable).
public struct ProblemView: Sendable {
    public var title: String
    public var detail: String
    public var viewer: ConsoleViewer?
    public var section: ConsolePage.Section?

    public init(title: String, detail: String, viewer: ConsoleViewer?, section: ConsolePage.Section? = nil) {
        self.title = title
        self.detail = detail
        self.viewer = viewer
        self.section = section
    }

    public func page() -> ConsolePage {
        ConsolePage(title: title, section: section, viewer: viewer,
                    body: "<section class=\"card\"><h1>\(Markup.text(title))</h1><p>\(Markup.text(detail))</p></section>")
    }
}
