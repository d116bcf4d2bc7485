import JSONText
import Testing

@testable import EngageClient

/// EngageClient keeps its own JSON string escaper (the client links nothing of the server); it
/// must write exactly what the server's `JSONString` writes, so that an event's text is the same
/// whichever side wrote it.
@Suite struct ClientJSONStringTests {
    static let inputs: [String] = {
        var inputs = ["", "plain", "a\"b\\c/", "\u{08}\u{0C}\n\r\t", "\u{7F}\u{80}\u{9F}\u{A0}", "\u{2028}\u{2029}\u{FEFF}",
                      "é😀👩‍👩‍👧", "\u{10FFFF}\u{1D11E}", "mixed \"😀\"\n\u{1}end",
                      // Swift strings hold no lone surrogates: invalid UTF-8 (an encoded surrogate,
                      // a truncated sequence, an overlong form) has become U+FFFD on decoding.
                      String(decoding: [0xED, 0xA0, 0x80], as: UTF8.self), String(decoding: [0x61, 0xF0, 0x9F], as: UTF8.self),
                      String(decoding: [0xC0, 0xAF], as: UTF8.self),
                      String(decoding: [0xD83D, 0x61] as [UInt16], as: UTF16.self)]
        inputs += (0...0x20).map { String(UnicodeScalar(UInt8($0))) }
        return inputs
    }()

    @Test(arguments: inputs)
    func theClientEscapesAsTheServerDoes(_ input: String) {
        var client = ""
        JSONWriter.appendString(input, to: &client)
        #expect(client == JSONString.render(input))
    }
}
