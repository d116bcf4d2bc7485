/// Who is looking at a page: the apps whose keys the browser holds (each a read or an admin key),
/// the app the page shows, and the token that the page's forms must send back.
public struct ConsoleViewer: Sendable, Equatable {
    public struct App: Sendable, Equatable {
        public var id: String
        /// An admin key of the app is among the browser's keys: it may start and stop experiments.
        public var canAdminister: Bool

        public init(id: String, canAdminister: Bool) {
            self.id = id
            self.canAdminister = canAdminister
        }
    }

    /// In id order; never empty.
    public var apps: [App]
    public var app: App
    /// The CSRF token every state-changing form carries.
    public var formToken: String

    public init(apps: [App], app: App, formToken: String) {
        self.apps = apps
        self.app = app
        self.formToken = formToken
    }

    /// `path` with this viewer's app in its query, and `query` after it.
    public func link(_ path: String, _ query: [(String, String?)] = []) -> String {
        ConsolePath.with(path, [("app", app.id)] + query)
    }
}
