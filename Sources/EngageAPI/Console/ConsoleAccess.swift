import EngageConsole
import EngageCore
import HTTPServer

/// A signed-in browser: its keys as the key store knows them, and the viewer a page is rendered for.
struct ConsoleAccess: Sendable {
    var session: ConsoleSession
    /// The session's keys that are known, active and allowed to read, with their presented secret.
    var keys: [(secret: String, key: APIKey)]
    var viewer: ConsoleViewer

    /// The presented secret of an admin key of `app`, if the browser holds one.
    func adminKey(of app: String) -> String? {
        keys.first { $0.key.appID == app && $0.key.role == .admin }?.secret
    }
}

/// A signed-in browser, or the page that turns the request away.
enum SignedIn {
    case granted(ConsoleAccess)
    case refused(HTTPResponse)
}

extension ConsoleRoutes {
    /// The request's signed-in browser, or the page that refuses it: 401 with the sign-in form
    /// (no cookie, or none of its keys valid), 403 for an app whose key it does not hold, 503 from
    /// the key store, 429 when the key of the app shown is over its rate (a token is taken from that
    /// key alone: another app's key, busy elsewhere, does not refuse this page). Keys found unknown
    /// or revoked are dropped from the cookie.
    func signedIn(_ request: HTTPRequest) async -> SignedIn {
        guard let session = ConsoleSession(request) else {
            return .refused(signInRequired(request, message: nil))
        }
        var valid: [(secret: String, key: APIKey)] = []
        for secret in session.keys {
            switch await authenticator.identify(presented: secret, asAnyOf: [.read]) {
            case .success(let key): valid.append((secret, key))
            case .failure(let refusal) where refusal.problem.status == 401 || refusal.problem.status == 403: continue
            case .failure(let refusal): return .refused(refused(refusal, viewer: nil))
            }
        }
        guard !valid.isEmpty else {
            var response = signInRequired(request, message: "The key kept in this browser is unknown, revoked or not a read "
                                          + "or admin key; sign in again.")
            response.setCookie(.removal(of: ConsoleSession.cookieName, secure: configuration.secureCookies))
            return .refused(response)
        }
        let kept = ConsoleSession(keys: valid.map(\.secret))
        let apps = Dictionary(grouping: valid.map(\.key), by: \.appID).map { app, keys in
            ConsoleViewer.App(id: app, canAdminister: keys.contains { $0.role == .admin })
        }.sorted { $0.id < $1.id }
        var app = apps[0]
        if let asked = request.query("app"), !asked.isEmpty {
            guard let found = apps.first(where: { $0.id == asked }) else {
                let viewer = ConsoleViewer(apps: apps, app: app, formToken: kept.formToken)
                let response = Self.respond(ProblemView(title: "No key for this app", detail: "This browser holds no key of app "
                                                        + "\(asked); add a read or admin key of that app to see it.",
                                                        viewer: viewer).page(), status: 403)
                // The page's sign-out form carries the token of the keys kept: the cookie must hold them too.
                return .refused(refreshingCookie(response, request: request, session: kept))
            }
            app = found
        }
        // The app's admin key if it has one, as changes need it, else its read key.
        let shown = valid.map(\.key).filter { $0.appID == app.id }.sorted { ($0.role == .admin ? 0 : 1) < ($1.role == .admin ? 0 : 1) }
        if let key = shown.first, let refusal = authenticator.charge(key) {
            return .refused(refused(refusal, viewer: nil))
        }
        return .granted(ConsoleAccess(session: kept, keys: valid, viewer: ConsoleViewer(apps: apps, app: app, formToken: kept.formToken)))
    }

    /// Sends the cookie again when keys were dropped from it.
    func refreshingCookie(_ response: HTTPResponse, request: HTTPRequest, access: ConsoleAccess) -> HTTPResponse {
        refreshingCookie(response, request: request, session: access.session)
    }

    /// The same for the keys kept by a refusal that grants no access.
    func refreshingCookie(_ response: HTTPResponse, request: HTTPRequest, session: ConsoleSession) -> HTTPResponse {
        guard ConsoleSession(request) != session else { return response }
        var response = response
        response.setCookie(session.cookie(secure: configuration.secureCookies, lifetimeSeconds: lifetimeSeconds))
        return response
    }

    /// 401 with the sign-in form, which brings the browser back to this page.
    func signInRequired(_ request: HTTPRequest, message: String?) -> HTTPResponse {
        let (token, cookie) = loginToken(request)
        var response = Self.respond(LoginView(next: Self.target(of: request), loginToken: token, message: message).page(), status: 401)
        response.headers.set("WWW-Authenticate", Self.challenge)
        if let cookie { response.setCookie(cookie) }
        return response
    }

    /// What every 401 of the console carries (RFC 9110: a 401 must name how to authenticate).
    static let challenge = "Cookie realm=\"engage console\", form-action=\"\(ConsolePath.login)\""

    /// A refusal of the key store (rate limited, unreachable) as a page.
    func refused(_ refusal: ProblemResponse, viewer: ConsoleViewer?) -> HTTPResponse {
        var response = Self.respond(ProblemView(title: refusal.problem.title, detail: refusal.problem.detail ?? "", viewer: viewer).page(),
                                    status: refusal.problem.status)
        if let retryAfter = refusal.response.headers["Retry-After"] { response.headers.set("Retry-After", retryAfter) }
        return response
    }

    /// The request's own path and query: where the sign-in form returns to.
    static func target(of request: HTTPRequest) -> String {
        let path = request.method == .GET || request.method == .HEAD ? request.path : ConsolePath.report
        let target = ConsolePath.with(path, request.queryItems.map { ($0.name, $0.value) })
        return ConsolePath.isLocal(target) ? target : ConsolePath.report
    }

    /// The sign-in form's double-submit token: the browser's, or a new one with the cookie that sets it.
    private func loginToken(_ request: HTTPRequest) -> (String, SetCookie?) {
        if let token = request.cookie(ConsoleSession.loginCookieName), token.utf8.count == 32, SetCookie.isCookieValue(token) {
            return (token, nil)
        }
        let token = ConsoleSession.newLoginToken()
        return (token, SetCookie(name: ConsoleSession.loginCookieName, value: token, secure: configuration.secureCookies))
    }

    // MARK: Sign in and out

    /// `GET /console/login`: the form (`add=1`: a key beside those held).
    func loginForm(_ request: HTTPRequest) -> HTTPResponse {
        let (token, cookie) = loginToken(request)
        let next = request.query("next").flatMap { ConsolePath.isLocal($0) ? $0 : nil } ?? ConsolePath.report
        let adding = request.query("add") == "1" && ConsoleSession(request) != nil
        var response = Self.respond(LoginView(next: next, loginToken: token, adding: adding).page())
        if let cookie { response.setCookie(cookie) }
        return response
    }

    /// `POST /console/login` with `key`, `next` and `csrf`: keeps the key beside those held and
    /// goes to `next` (303), or shows the form again saying why not.
    func signIn(_ request: HTTPRequest) async -> HTTPResponse {
        let next = request.formValue("next").flatMap { ConsolePath.isLocal($0) ? $0 : nil } ?? ConsolePath.report
        func again(_ status: Int, _ message: String) -> HTTPResponse {
            let token = ConsoleSession.newLoginToken()
            var response = Self.respond(LoginView(next: next, loginToken: token, message: message).page(), status: status)
            response.setCookie(SetCookie(name: ConsoleSession.loginCookieName, value: token, secure: configuration.secureCookies))
            if status == 401 { response.headers.set("WWW-Authenticate", Self.challenge) }
            return response
        }
        guard let expected = request.cookie(ConsoleSession.loginCookieName),
              let sent = request.formValue("csrf"), !sent.isEmpty, KeyFormat.constantTimeEquals(expected, sent) else {
            return again(403, "The sign-in form had expired or came from another page; enter the key again.")
        }
        // Scalar by scalar: "\r\n" (a key pasted with its line ending) is one Character, equal to neither.
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: (request.formValue("key") ?? "").unicodeScalars.filter { !" \t\n\r".unicodeScalars.contains($0) })
        let presented = String(kept)
        guard !presented.isEmpty, SetCookie.isCookieValue(presented), !presented.contains(".") else {
            return again(401, "That is not an engage API key (they look like egk_…).")
        }
        let key: APIKey
        switch await authenticator.authorize(presented: presented, asAnyOf: [.read]) {
        case .success(let found): key = found
        case .failure(let refusal) where refusal.problem.status == 401:
            return again(401, "That key is unknown or revoked.")
        case .failure(let refusal) where refusal.problem.status == 403:
            return again(403, "An ingest key cannot read reports: sign in with a read or admin key.")
        case .failure(let refusal):
            return refused(refusal, viewer: nil)
        }
        let session = (ConsoleSession(request) ?? ConsoleSession(keys: [])).adding(presented)
        let destination = ConsolePath.hasParameter("app", in: next) ? next : ConsolePath.with(next, [("app", key.appID)])
        var response = Self.secured(.seeOther(destination))
        response.setCookie(session.cookie(secure: configuration.secureCookies, lifetimeSeconds: lifetimeSeconds))
        response.setCookie(.removal(of: ConsoleSession.loginCookieName, secure: configuration.secureCookies))
        return response
    }

    /// `POST /console/logout` with the session's `csrf`: forgets every key (the cookie is removed).
    /// A request without the cookie (another site's form: the cookie is `SameSite=Strict`) removes
    /// nothing, so that no other page can sign a browser out.
    func signOut(_ request: HTTPRequest) -> HTTPResponse {
        if let session = ConsoleSession(request), !session.accepts(formToken: request.formValue("csrf")) {
            return Self.respond(ProblemView(title: "Not signed out", detail: "The form had expired or came from another page; "
                                            + "reload the page and sign out again.", viewer: nil).page(), status: 403)
        }
        var response = Self.secured(.seeOther(ConsolePath.login))
        if request.cookie(ConsoleSession.cookieName) != nil {
            response.setCookie(.removal(of: ConsoleSession.cookieName, secure: configuration.secureCookies))
        }
        return response
    }
}
