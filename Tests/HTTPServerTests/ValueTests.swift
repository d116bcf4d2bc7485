import Testing

@testable import HTTPServer

@Suite struct ValueTests {
    @Test func headersAreCaseInsensitiveAndKeepEveryValue() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain"]
        headers.add("Set-Cookie", "a=1")
        headers.add("set-cookie", "b=2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["SET-COOKIE"] == "a=1")
        #expect(headers.values(for: "Set-Cookie") == ["a=1", "b=2"])
        headers.set("SET-cookie", "c=3")
        #expect(headers.values(for: "set-cookie") == ["c=3"])
        #expect(headers.count == 2)
        #expect(headers["missing"] == nil)
    }

    @Test func problemRendersRFC9457Members() {
        let problem = HTTPProblem(
            status: 422, slug: "invalid-event", title: "Invalid event", detail: "name \"x\" is too long",
            members: [.init(name: "index", json: "3"), .init(name: "status", json: "1")])
        #expect(
            problem.json
                == #"{"type":"https://engage.dev/problems/invalid-event","title":"Invalid event","status":422,"detail":"name \"x\" is too long","index":3}"#
        )
        #expect(problem.code == "invalid-event")
        #expect(problem.response.status == 422)
        #expect(problem.response.headers["content-type"] == "application/problem+json")
        #expect(HTTPProblem(status: 418, title: "Teapot").json == #"{"type":"about:blank","title":"Teapot","status":418}"#)
    }

    @Test func percentDecoding() {
        #expect(PercentDecoding.decode("a%20b+c", plusAsSpace: false) == "a b+c")
        #expect(PercentDecoding.decode("a%20b+c", plusAsSpace: true) == "a b c")
        #expect(PercentDecoding.decode("%zz%4", plusAsSpace: true) == "%zz%4")
        #expect(PercentDecoding.decode("caf%C3%A9", plusAsSpace: false) == "café")
    }

    @Test func logValuesAreQuotedOnlyWhenNeeded() {
        #expect(LogValue.render("/v1/events") == "/v1/events")
        #expect(LogValue.render("/a b") == "\"/a b\"")
        #expect(LogValue.milliseconds(1.005) == "1.00" || LogValue.milliseconds(1.005) == "1.01")
        #expect(LogValue.milliseconds(12.3) == "12.30")
    }
}

@Suite struct RouterTests {
    static let router: Router = {
        var router = Router()
        router.get("/users/:id") { .text("user \($0.pathParameters["id"] ?? "?")") }
        router.get("/users/me") { _ in .text("me") }
        router.put("/users/:id") { .text("put \($0.pathParameters["id"] ?? "?")") }
        router.get("/") { _ in .text("root") }
        router.post("/fail") { _ in throw HTTPProblem.badRequest("nope") }
        router.post("/crash") { _ in throw CancellationError() }
        return router
    }()

    private func send(_ method: HTTPMethod, _ path: String) async -> HTTPResponse {
        await Self.router.respond(to: HTTPRequest(method: method, path: path))
    }

    @Test func matchesLiteralsAndParameters() async {
        #expect(await send(.GET, "/users/42").body == Array("user 42".utf8))
        #expect(await send(.GET, "/users/me").body == Array("me".utf8))
        #expect(await send(.PUT, "/users/7").body == Array("put 7".utf8))
        #expect(await send(.GET, "/").body == Array("root".utf8))
        #expect(await send(.HEAD, "/users/1").status == 200)
    }

    @Test func unknownPathIs404Problem() async {
        let response = await send(.GET, "/users/42/extra")
        #expect(response.status == 404)
        #expect(response.headers["Content-Type"] == "application/problem+json")
        #expect(
            String(decoding: response.body, as: UTF8.self)
                == #"{"type":"https://engage.dev/problems/not-found","title":"Not found","status":404,"detail":"No resource at /users/42/extra."}"#
        )
        #expect(await send(.GET, "/users/").status == 404)
    }

    @Test func wrongMethodIs405WithAllow() async {
        let response = await send(.DELETE, "/users/42")
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD, PUT")
        #expect(response.headers["Content-Type"] == "application/problem+json")
    }

    @Test func thrownErrorsBecomeProblems() async {
        let problem = await send(.POST, "/fail")
        #expect(problem.status == 400)
        #expect(problem == HTTPProblem.badRequest("nope").response)
        let crash = await send(.POST, "/crash")
        #expect(crash == HTTPProblem.internalError.response)
    }
}

@Suite struct GzipTests {
    @Test func roundTrip() throws {
        let text = Array(String(repeating: "engage analytics ", count: 1000).utf8)
        let compressed = Gzip.deflate(text)
        #expect(compressed.count < text.count / 10)
        #expect(compressed.prefix(2) == [0x1F, 0x8B])
        #expect(try Gzip.inflate(compressed, limit: text.count) == text)
        #expect(try Gzip.inflate(Gzip.deflate([]), limit: 0) == [])
    }

    @Test func concatenatedMembersInflateInOrder() throws {
        let data = Gzip.deflate(Array("abc".utf8)) + Gzip.deflate(Array("def".utf8))
        #expect(try Gzip.inflate(data, limit: 6) == Array("abcdef".utf8))
    }

    @Test func bombStopsAtTheLimit() {
        let bomb = Gzip.deflate([UInt8](repeating: 0, count: 10_000_000))
        #expect(bomb.count < 20_000)
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) { try Gzip.inflate(bomb, limit: 1 << 20) }
        let exact = Gzip.deflate([UInt8](repeating: 7, count: 100))
        #expect(throws: GzipError.tooLarge(limit: 99)) { try Gzip.inflate(exact, limit: 99) }
        #expect((try? Gzip.inflate(exact, limit: 100))?.count == 100)
    }

    @Test func corruptAndTruncatedInput() {
        let good = Gzip.deflate(Array(String(repeating: "x y z ", count: 100).utf8))
        #expect(throws: GzipError.truncated) { try Gzip.inflate(Array(good.prefix(good.count / 2)), limit: 1000) }
        #expect(throws: GzipError.truncated) { try Gzip.inflate([], limit: 1000) }
        #expect(throws: GzipError.corrupt) { try Gzip.inflate(Array("not gzip at all".utf8), limit: 1000) }
        var flipped = good
        flipped[flipped.count - 5] ^= 0xFF  // damages the CRC-32 / length trailer
        #expect(throws: GzipError.corrupt) { try Gzip.inflate(flipped, limit: 1000) }
    }
}
