import Testing

@testable import EngageAPI

/// The byte-level reading of `Authorization: Bearer <key>` that every keyed request goes through.
@Suite("Bearer token")
struct BearerTokenTests {
    @Test(arguments: [
        ("Bearer egk_1234abcd_secret", "egk_1234abcd_secret"),
        ("bearer egk_1234abcd_secret", "egk_1234abcd_secret"),
        ("BEARER   egk_1234abcd_secret  ", "egk_1234abcd_secret"),
        ("  Bearer \tegk_1234abcd_secret\t", "egk_1234abcd_secret"),
        ("Bearer egk_1234 abcd_secret", "egk_1234abcd_secret"),
        ("Bearer clé", "clé"),
    ])
    func readsTheKey(header: String, key: String) {
        #expect(Authenticator.bearerToken(header) == key)
    }

    @Test(arguments: ["", "Bearer", "Bearer ", "Bearer \t ", "Bearerkey", "Basic ZWdrOnNlY3JldA==", "Token egk_1", "egk_1234abcd_secret",
                      "Bearér key"])
    func refusesAnythingElse(header: String) {
        #expect(Authenticator.bearerToken(header) == nil)
    }
}
