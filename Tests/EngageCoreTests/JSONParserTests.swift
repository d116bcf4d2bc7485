import JSONText
import Testing
@testable import EngageCore

private func parse(_ text: String, maxDepth: Int = 32) throws(JSONError) -> JSON {
    try JSON.parse(Array(text.utf8), maxDepth: maxDepth)
}

private func error(_ bytes: [UInt8], maxDepth: Int = 32) -> JSONError? {
    do {
        _ = try JSON.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}

private func error(_ text: String) -> JSONError? { error(Array(text.utf8)) }

@Suite struct JSONParserTests {
    @Test(arguments: [
        "null", "true", "false", "0", "-0", "12", "-12.5e+3", "1E-2", "0.0", "\"\"", "[]", "{}",
        " \t\r\n[1, 2 ,\"x\"]\n", #"{"a":{"b":[null,{}]},"c":"\u00e9\ud83d\ude00"}"#, "\"é😀\"",
    ])
    func acceptsValidDocuments(_ text: String) throws {
        _ = try parse(text)
    }

    @Test(arguments: [
        ("", 0, "unexpected end of input"),
        ("   ", 3, "unexpected end of input"),
        ("[1,2", 4, "unexpected end of input"),
        ("{\"a\"", 4, "unexpected end of input"),
        ("\"abc", 4, "unexpected end of input"),
        ("tru", 3, "unexpected end of input"),
        ("1.", 2, "unexpected end of input"),
        ("[1,]", 3, "unexpected character ']'"),
        ("[1 2]", 3, "expected ',' or ']' but found character '2'"),
        ("{\"a\":1 \"b\":2}", 7, "expected ',' or '}' but found character '\"'"),
        ("{\"a\":1,}", 7, "expected a string key but found character '}'"),
        ("{a:1}", 1, "expected a string key but found character 'a'"),
        ("{\"a\" 1}", 5, "expected ':' but found character '1'"),
        ("[1] x", 4, "unexpected data after the JSON value"),
        ("{} {}", 3, "unexpected data after the JSON value"),
        ("trux", 3, "unexpected character 'x'"),
        ("nul", 3, "unexpected end of input"),
        ("01", 0, "leading zeros are not allowed in numbers"),
        ("[-007]", 1, "leading zeros are not allowed in numbers"),
        ("NaN", 0, "unexpected character 'N'"),
        ("Infinity", 0, "unexpected character 'I'"),
        ("-Infinity", 0, "invalid number"),
        ("+1", 0, "unexpected character '+'"),
        (".5", 0, "unexpected character '.'"),
        ("1.e5", 0, "invalid number"),
        ("[1e]", 1, "invalid number"),
        ("\"a\tb\"", 2, "control character 0x09 in string must be escaped"),
        ("[\"\u{1F}\"]", 2, "control character 0x1F in string must be escaped"),
        (#""\u0000""#, 1, "\\u0000 is not allowed"),
        (#"{"k":"ab\u0000"}"#, 8, "\\u0000 is not allowed"),
        (#""\uD800""#, 1, "lone surrogate in \\u escape"),
        (#""\uDC00""#, 1, "lone surrogate in \\u escape"),
        (#""\uD800\u0041""#, 1, "lone surrogate in \\u escape"),
        (#""\uD800x""#, 1, "lone surrogate in \\u escape"),
        (#""\x""#, 1, "invalid escape sequence"),
        (#""\u12G4""#, 1, "invalid \\u escape"),
        (#""\u12"#, 5, "unexpected end of input"),
        (#"{"type":1,"type":2}"#, 10, "duplicate key \"type\""),
        (#"{"a":1,"\u0061":2}"#, 7, "duplicate key \"a\""),
        (#"{"x":{"a":1,"b":{"a":2},"a":3}}"#, 24, "duplicate key \"a\""),
    ])
    func rejectsWithExactOffsetAndReason(_ text: String, _ offset: Int, _ reason: String) {
        #expect(error(text) == JSONError(offset: offset, reason: reason))
    }

    /// What a Double holds passes (PostgreSQL's `jsonb` stores it); beyond, or a nonzero value
    /// rounding to 0, does not (`1e1000000` and `1e-20000` overflow `numeric`).
    @Test(arguments: [
        ("{}", true), ("[0, -0, 0.0, 0e-324, -0.000e+400, 0E1000000]", true), ("123456789012345678901234567890", true),
        ("1.7e308", true), ("-1.7976931348623157e308", true), ("5e-324", true), ("1e-320", true),
        (#"{"a":[1,2.5,"1e999",null,true]}"#, true), ("-12.5e+3", true),
        ("1.8e308", false), ("-1e309", false), ("1e1000000", false), (String(repeating: "9", count: 400), false),
        ("1e-400", false), ("-0.0001e-324", false), ("0e-325", false), ("0.0e-99999", false),
        ("0e-99999999999999999999999", false), (#"{"a":{"b":[1,{"c":1e-20000}]}}"#, false),
        // `numeric` keeps at most 16383 decimal places, the exponent counted, whatever the value.
        ("1." + String(repeating: "0", count: 16383), true), ("1." + String(repeating: "0", count: 16384), false),
        ("-0." + String(repeating: "0", count: 16384), false), ("1." + String(repeating: "5", count: 16100) + "e-300", false),
        ("1." + String(repeating: "5", count: 16100) + "e+300", true), ("2.5e-3", true),
        // A zero's exponent too: PostgreSQL 15 refuses 0e1073741823 before it looks at the digits.
        ("0e1073741822", true), ("0e1073741823", false), ("-0.0E9999999999", false), ("0e9223372036854775807", false),
    ])
    func numbersFitDouble(_ text: String, _ fits: Bool) throws {
        let json = try JSON.parse(Array(text.utf8))
        #expect(json.numbersFitDouble(within: json.root) == fits)
    }

    @Test func sameKeyInDifferentObjectsIsFine() throws {
        _ = try parse(#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#)
    }

    @Test func duplicateKeysInLargeObjects() {
        let members = (0..<200).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let text = "{" + members + ",\"k150\":0}"
        let offset = text.utf8.count - 9
        #expect(error(text) == JSONError(offset: offset, reason: "duplicate key \"k150\""))
    }

    @Test(arguments: [
        ([0xC0, 0x80], "overlong NUL"),
        ([0xC1, 0xBF], "overlong two-byte"),
        ([0xE0, 0x80, 0x80], "overlong three-byte"),
        ([0xE0, 0x9F, 0xBF], "overlong three-byte, high"),
        ([0xF0, 0x8F, 0xBF, 0xBF], "overlong four-byte"),
        ([0xED, 0xA0, 0x80], "UTF-8 encoded high surrogate"),
        ([0xED, 0xBF, 0xBF], "UTF-8 encoded low surrogate"),
        ([0xF4, 0x90, 0x80, 0x80], "above U+10FFFF"),
        ([0xF5, 0x80, 0x80, 0x80], "invalid lead byte F5"),
        ([0xFF], "invalid byte FF"),
        ([0x80], "lone continuation byte"),
        ([0xE2, 0x82], "truncated three-byte sequence"),
        ([0xF0, 0x9F, 0x98], "truncated four-byte sequence"),
        ([0xC3, 0x41], "continuation replaced by ASCII"),
    ] as [([UInt8], String)])
    func rejectsInvalidUTF8(_ sequence: [UInt8], _ label: String) {
        let quoted: [UInt8] = [0x22, 0x61] + sequence + [0x22]
        #expect(error(quoted) == JSONError(offset: 2, reason: "invalid UTF-8"), "\(label)")
    }

    @Test func rejectsTruncatedUTF8AtEndOfInput() {
        #expect(error([0x22, 0xE2, 0x82]) == JSONError(offset: 1, reason: "invalid UTF-8"))
    }

    @Test func rejectsNonASCIIOutsideStrings() {
        #expect(error([0xEF, 0xBB, 0xBF, 0x31]) == JSONError(offset: 0, reason: "unexpected byte 0xEF"))
    }

    @Test(arguments: [[0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xEF, 0xBF, 0xBF],
                      [0xEE, 0x80, 0x80], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF]] as [[UInt8]])
    func acceptsBoundaryUTF8(_ sequence: [UInt8]) throws {
        let json = try JSON.parse([0x22] + sequence + [0x22])
        #expect(json.stringBytes(json.root) == sequence)
    }

    @Test func depthLimitIsEnforcedWithoutRecursion() {
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 10_000)
        #expect(error(deep) == JSONError(offset: 32, reason: "nesting deeper than 32 levels"))
        let objects = Array(String(repeating: #"{"a":"#, count: 10_000).utf8)
        #expect(error(objects, maxDepth: 5) == JSONError(offset: 25, reason: "nesting deeper than 5 levels"))
    }

    @Test func exactlyMaxDepthIsAccepted() throws {
        let text = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        let json = try parse(text)
        #expect(json.nestingLevels(json.root) == 32)
        #expect(error(Array(("[" + text + "]").utf8))?.reason == "nesting deeper than 32 levels")
    }

    @Test func tenThousandLevelsParseWhenAllowed() throws {
        let text = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let json = try parse(text, maxDepth: 10_000)
        #expect(json.nestingLevels(json.root) == 10_000)
        #expect(json.byteRange(json.root) == 0..<20_000)
    }

    @Test func numbersKeepSourceTextAndConvertExactly() throws {
        let json = try parse("[0,-0,9223372036854775807,-9223372036854775808,9223372036854775808,123456789012345678901234567890,1.5,1e2,1e400,-2.5E-3]")
        let n = Array(json.elements(json.root))
        #expect(n.map { json.int64($0) } == [0, 0, .max, .min, nil, nil, nil, nil, nil, nil])
        #expect(n.map { json.isIntegerLiteral($0) } == [true, true, true, true, true, true, false, false, false, false])
        #expect(json.numberText(n[5]) == "123456789012345678901234567890")
        #expect(json.double(n[5]) == 1.2345678901234568e29)
        #expect(json.double(n[6]) == 1.5)
        #expect(json.double(n[7]) == 100)
        #expect(json.double(n[8]) == nil)
        #expect(json.double(n[9]) == -0.0025)
        #expect(json.double(n[2]) == 9.223372036854775807e18)
    }

    @Test func accessors() throws {
        let text = #" {"s":"a\"b\\c\/\n\u00e9\ud83d\ude00","n":null,"t":true,"f":false,"o":{"x":[1,{"y":2}]},"e":[]} "#
        let json = try parse(text)
        let root = json.root
        #expect(json.kind(root) == .object)
        #expect(json.count(root) == 6)
        #expect(json.members(root).map { json.string($0.key)! } == ["s", "n", "t", "f", "o", "e"])
        let s = try #require(json.member(root, "s"))
        #expect(json.string(s) == "a\"b\\c/\né😀")
        #expect(json.hasEscapes(s))
        #expect(json.string(s, equals: "a\"b\\c/\né😀"))
        #expect(json.isNull(try #require(json.member(root, "n"))))
        #expect(json.bool(try #require(json.member(root, "t"))) == true)
        #expect(json.bool(try #require(json.member(root, "f"))) == false)
        let o = try #require(json.member(root, "o"))
        #expect(json.kind(o) == .object)
        #expect(String(decoding: json.rawBytes(o), as: UTF8.self) == #"{"x":[1,{"y":2}]}"#)
        #expect(json.nestingLevels(o) == 3)
        let x = try #require(json.member(o, "x"))
        #expect(json.count(x) == 2)
        #expect(json.elements(x).map { json.kind($0) } == [.number, .object])
        #expect(json.count(try #require(json.member(root, "e"))) == 0)
        #expect(json.member(root, "missing") == nil)
        #expect(json.byteRange(root) == 1..<(text.utf8.count - 1))
    }

    @Test func parsesASubrangeWithAbsoluteOffsets() throws {
        let bytes = Array("xx{\"a\":[1]}yy{".utf8)
        let json = try JSON.parse(bytes, range: 2..<11)
        #expect(json.byteRange(json.member(json.root, "a")!) == 7..<10)
        #expect(throws: JSONError(offset: 14, reason: "unexpected end of input")) {
            try JSON.parse(bytes, range: 13..<14)
        }
    }
}

@Suite struct JSONWriterTests {
    @Test(arguments: [
        ("plain", #""plain""#),
        ("a\"b\\c/", #""a\"b\\c/""#),
        ("\u{08}\u{0C}\n\r\t", #""\b\f\n\r\t""#),
        ("\u{01}\u{1F}\u{7F}", "\"\\u0001\\u001f\u{7F}\""),
        ("é😀", "\"é😀\""),
        ("", #""""#),
    ])
    func escapesStringsCanonically(_ input: String, _ expected: String) throws {
        let encoded = Array(JSONString.render(input).utf8)
        #expect(String(decoding: encoded, as: UTF8.self) == expected)
        let json = try JSON.parse(encoded)
        #expect(json.string(json.root) == input)
    }

    @Test func writesNestedStructures() {
        var w = JSONWriter()
        w.beginObject()
        w.key("a")
        w.int(-42)
        w.key("b")
        w.beginArray()
        w.int(0)
        w.bool(true)
        w.null()
        w.beginObject()
        w.endObject()
        w.double(0.5)
        w.endArray()
        w.key("c\"")
        w.raw(Array(#"{"x":1}"#.utf8))
        w.key("d")
        w.int(Int(Int64.max))
        w.endObject()
        #expect(String(decoding: w.bytes, as: UTF8.self)
                == #"{"a":-42,"b":[0,true,null,{},0.5],"c\"":{"x":1},"d":9223372036854775807}"#)
    }
}
