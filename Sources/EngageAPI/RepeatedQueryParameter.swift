import HTTPServer

/// A query parameter given twice is refused (400 `bad-query`, naming it) rather than one of its
/// values being used without a word: `?since=2026-11-01&since=2026-11-20` would otherwise answer
/// for a range the caller may not have meant. A parameter a route documents as repeatable
/// (`/v1/simulate`'s `category`) is left out of the check. The console's report filters refuse
/// one given twice with the same words, on its own problem page.
struct RepeatedQueryParameter {
    private var seen: Set<String> = []

    /// Notes `item`; throws when its name came before.
    mutating func note(_ item: HTTPRequest.QueryItem) throws(HTTPProblem) {
        guard seen.insert(item.name).inserted else { throw Self.problem(item.name) }
    }

    /// Refuses the first parameter of `request` given twice, in the order sent.
    static func refuse(in request: HTTPRequest) throws(HTTPProblem) {
        var check = RepeatedQueryParameter()
        for item in request.queryItems { try check.note(item) }
    }

    static func problem(_ name: String) -> HTTPProblem {
        APIProblems.badRequest(detail(name), slug: "bad-query")
    }

    static func detail(_ name: String) -> String {
        "query parameter \(name) is given twice; give it once"
    }
}
