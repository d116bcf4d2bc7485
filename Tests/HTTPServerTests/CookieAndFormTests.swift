import Testing

@testable import HTTPServer

/// Cookies as browsers send them and as the console sets them; HTML form bodies.
@Suite struct CookieAndFormTests {
    @Test func cookiesAreFoundByNameAcrossHeadersAndQuotesDropped() {
        let request = HTTPRequest(method: .GET, path: "/", headers: HTTPHeaders([
            ("Cookie", "theme=dark;  engage_console=egk_1.egk_2 ; other = x"), ("Cookie", "late=\"quoted value\""),
        ]))
        #expect(request.cookie("engage_console") == "egk_1.egk_2")
        #expect(request.cookie("other") == "x")
        #expect(request.cookie("late") == "quoted value")
        #expect(request.cookie("engage") == nil)
        #expect(HTTPRequest(method: .GET, path: "/").cookie("theme") == nil)
    }

    @Test func setCookieRendersItsAttributesInOrder() {
        #expect(SetCookie(name: "s", value: "v", maxAge: 60, secure: true).headerValue
                == "s=v; Path=/; Max-Age=60; HttpOnly; Secure; SameSite=Strict")
        #expect(SetCookie(name: "s", value: "v", httpOnly: false, sameSite: .lax).headerValue == "s=v; Path=/; SameSite=Lax")
        #expect(SetCookie.removal(of: "s").headerValue == "s=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        var response = HTTPResponse.html("<p>x</p>")
        response.setCookie(SetCookie(name: "a", value: "1"))
        response.setCookie(SetCookie(name: "b", value: "2"))
        #expect(response.headers.values(for: "Set-Cookie").count == 2)
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
    }

    @Test func cookieValuesAreCookieOctetsOnly() {
        #expect(SetCookie.isCookieValue("egk_0badc0de_ab.egk_1-x"))
        for bad in ["a b", "a;b", "a,b", "a\"b", "a\\b", "é", "a\tb"] {
            #expect(!SetCookie.isCookieValue(bad), "\(bad)")
        }
    }

    @Test func formBodiesDecodePlusesAndEscapes() {
        let form = HTTPRequest(method: .POST, path: "/", headers: ["Content-Type": "application/x-www-form-urlencoded; charset=UTF-8"],
                               body: Array("key=egk_1%2B2+x&next=%2Fconsole%2Freport%3Fapp%3Da&empty=&bare&key=second".utf8))
        #expect(form.formValue("key") == "egk_1+2 x")
        #expect(form.formValue("next") == "/console/report?app=a")
        #expect(form.formValue("empty") == "")
        #expect(form.formValue("bare") == "")
        #expect(form.formItems?.count == 5)
        #expect(form.formValue("missing") == nil)
        let json = HTTPRequest(method: .POST, path: "/", headers: ["Content-Type": "application/json"], body: Array("key=x".utf8))
        #expect(json.formItems == nil && json.formValue("key") == nil)
    }
}
