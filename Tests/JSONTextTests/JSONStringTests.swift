import JSONText
import Testing

@Suite struct JSONStringTests {
    @Test(arguments: [
        ("plain", #""plain""#),
        ("a\"b\\c/", #""a\"b\\c/""#),
        ("\u{08}\u{0C}\n\r\t", #""\b\f\n\r\t""#),
        ("\u{00}\u{01}\u{1B}\u{1F}", #""\u0000\u0001\u001b\u001f""#),
        // DEL, the line and paragraph separators and everything beyond ASCII are copied.
        ("\u{7F}\u{80}\u{2028}\u{2029}é😀", "\"\u{7F}\u{80}\u{2028}\u{2029}é😀\""),
        ("", #""""#),
    ])
    func escapesOnlyWhatJSONRequires(_ input: String, _ expected: String) {
        #expect(JSONString.render(input) == expected)
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        JSONString.append(input, to: &bytes)
        #expect(bytes == [UInt8(ascii: "[")] + Array(expected.utf8))
    }

    @Test func invalidUTF8HasBecomeReplacementCharactersBeforeItGetsHere() {
        // A Swift string holds no lone surrogate: decoding one (ED A0 80) yields U+FFFD.
        let decoded = String(decoding: [0x61, 0xED, 0xA0, 0x80, 0x62], as: UTF8.self)
        #expect(JSONString.render(decoded) == "\"a\u{FFFD}\u{FFFD}\u{FFFD}b\"")
    }
}
