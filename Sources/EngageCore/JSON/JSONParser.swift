extension JSON {
    /// Single-pass, non-recursive validator that records the tape.
    struct Parser {
        let bytes: [UInt8]
        let end: Int
        let maxDepth: Int
        var pos: Int
        var tape: [Token] = []
        /// Tape indices of the open containers, innermost last.
        var open: [Int] = []

        init(bytes: [UInt8], range: Range<Int>, maxDepth: Int) {
            self.bytes = bytes
            self.pos = range.lowerBound
            self.end = range.upperBound
            self.maxDepth = maxDepth
            tape.reserveCapacity(range.count / 8 + 4)
        }

        private static let quote = UInt8(ascii: "\"")
        private static let backslash = UInt8(ascii: "\\")

        mutating func parseDocument() throws(JSONError) {
            var expectingValue = true
            while true {
                if expectingValue {
                    // A container that did not close at once wants its first value (for an
                    // object, its first key and colon are already consumed).
                    if try parseValueStart() { continue }
                }
                guard let top = open.last else { break }
                skipWhitespace()
                guard pos < end else { throw .unexpectedEnd(at: pos) }
                let b = bytes[pos]
                if tape[top].tag == .object {
                    if b == UInt8(ascii: ",") {
                        pos += 1
                        try parseKey()
                        expectingValue = true
                    } else if b == UInt8(ascii: "}") {
                        try closeObject(top)
                        expectingValue = false
                    } else {
                        throw .expected("',' or '}'", found: b, at: pos)
                    }
                } else {
                    if b == UInt8(ascii: ",") {
                        pos += 1
                        expectingValue = true
                    } else if b == UInt8(ascii: "]") {
                        close(top)
                        expectingValue = false
                    } else {
                        throw .expected("',' or ']'", found: b, at: pos)
                    }
                }
            }
            skipWhitespace()
            if pos < end {
                throw JSONError(offset: pos, reason: "unexpected data after the JSON value")
            }
        }

        /// Parses a scalar, or opens a container (consuming an immediate close, or for objects the
        /// first key and colon). Returns true when an opened container now expects a value.
        private mutating func parseValueStart() throws(JSONError) -> Bool {
            skipWhitespace()
            guard pos < end else { throw .unexpectedEnd(at: pos) }
            let b = bytes[pos]
            switch b {
            case Self.quote:
                try parseString()
            case UInt8(ascii: "{"):
                let index = try openContainer(.object)
                skipWhitespace()
                guard pos < end else { throw .unexpectedEnd(at: pos) }
                if bytes[pos] == UInt8(ascii: "}") {
                    close(index)
                    return false
                }
                try parseKey()
                return true
            case UInt8(ascii: "["):
                let index = try openContainer(.array)
                skipWhitespace()
                guard pos < end else { throw .unexpectedEnd(at: pos) }
                if bytes[pos] == UInt8(ascii: "]") {
                    close(index)
                    return false
                }
                return true
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                try parseNumber()
            case UInt8(ascii: "t"):
                try parseLiteral("true", .trueValue)
            case UInt8(ascii: "f"):
                try parseLiteral("false", .falseValue)
            case UInt8(ascii: "n"):
                try parseLiteral("null", .null)
            default:
                throw .unexpected(b, at: pos)
            }
            return false
        }

        private mutating func openContainer(_ tag: Token.Tag) throws(JSONError) -> Int {
            if open.count >= maxDepth {
                throw JSONError(offset: pos, reason: "nesting deeper than \(maxDepth) levels")
            }
            let index = tape.count
            tape.append(Token(tag: tag, flags: 0, depth: UInt16(open.count), start: UInt32(pos),
                              end: 0, next: 0))
            open.append(index)
            pos += 1
            return index
        }

        /// Consumes the closing bracket at `pos` for the container at tape `index`.
        private mutating func close(_ index: Int) {
            pos += 1
            tape[index].end = UInt32(pos)
            tape[index].next = UInt32(tape.count)
            open.removeLast()
        }

        private mutating func closeObject(_ index: Int) throws(JSONError) {
            close(index)
            try checkDuplicateKeys(object: index)
        }

        /// Parses `"key"` followed by `:`, leaving `pos` before the member's value.
        private mutating func parseKey() throws(JSONError) {
            skipWhitespace()
            guard pos < end else { throw .unexpectedEnd(at: pos) }
            guard bytes[pos] == Self.quote else {
                throw .expected("a string key", found: bytes[pos], at: pos)
            }
            try parseString()
            skipWhitespace()
            guard pos < end else { throw .unexpectedEnd(at: pos) }
            guard bytes[pos] == UInt8(ascii: ":") else {
                throw .expected("':'", found: bytes[pos], at: pos)
            }
            pos += 1
        }

        @inline(__always)
        private mutating func skipWhitespace() {
            pos = JSON.skippingWhitespace(bytes, from: pos, end: end)
        }

        private mutating func parseLiteral(_ text: StaticString, _ tag: Token.Tag) throws(JSONError) {
            let start = pos
            let ok: Bool = text.withUTF8Buffer { expected in
                for b in expected {
                    guard pos < end, bytes[pos] == b else { return false }
                    pos += 1
                }
                return true
            }
            guard ok else {
                if pos >= end { throw .unexpectedEnd(at: pos) }
                throw .unexpected(bytes[pos], at: pos)
            }
            append(tag, flags: 0, start: start)
        }

        @inline(__always)
        private mutating func append(_ tag: Token.Tag, flags: UInt8, start: Int) {
            tape.append(Token(tag: tag, flags: flags, depth: UInt16(open.count), start: UInt32(start),
                              end: UInt32(pos), next: UInt32(tape.count + 1)))
        }

        // MARK: Numbers

        private mutating func parseNumber() throws(JSONError) {
            let start = pos
            var flags = Token.integerFlag
            if bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard pos < end else { throw .unexpectedEnd(at: pos) }
            let first = bytes[pos]
            if first == UInt8(ascii: "0") {
                pos += 1
                if pos < end, isDigit(bytes[pos]) {
                    throw JSONError(offset: start, reason: "leading zeros are not allowed in numbers")
                }
            } else if isDigit(first) {
                skipDigits()
            } else {
                throw JSONError(offset: start, reason: "invalid number")
            }
            if pos < end, bytes[pos] == UInt8(ascii: ".") {
                pos += 1
                try requireDigits(start)
                flags = 0
            }
            if pos < end, bytes[pos] | 0x20 == UInt8(ascii: "e") {
                pos += 1
                if pos < end, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") {
                    pos += 1
                }
                try requireDigits(start)
                flags = 0
            }
            append(.number, flags: flags, start: start)
        }

        @inline(__always) private func isDigit(_ b: UInt8) -> Bool {
            b &- UInt8(ascii: "0") < 10
        }

        private mutating func skipDigits() {
            while pos < end, isDigit(bytes[pos]) { pos += 1 }
        }

        private mutating func requireDigits(_ numberStart: Int) throws(JSONError) {
            guard pos < end else { throw .unexpectedEnd(at: pos) }
            guard isDigit(bytes[pos]) else { throw JSONError(offset: numberStart, reason: "invalid number") }
            skipDigits()
        }

        // MARK: Strings

        private mutating func parseString() throws(JSONError) {
            let start = pos
            var flags: UInt8 = 0
            pos += 1
            while true {
                // Fast path: printable ASCII other than quote and backslash.
                while pos < end {
                    let b = bytes[pos]
                    if b < 0x20 || b >= 0x80 || b == Self.quote || b == Self.backslash { break }
                    pos += 1
                }
                guard pos < end else { throw .unexpectedEnd(at: pos) }
                let b = bytes[pos]
                if b == Self.quote {
                    pos += 1
                    break
                } else if b == Self.backslash {
                    flags = Token.escapedFlag
                    try parseEscape()
                } else if b < 0x20 {
                    throw JSONError(offset: pos, reason: "control character 0x\(JSONError.hex2(b)) in string must be escaped")
                } else {
                    try validateUTF8Sequence()
                }
            }
            append(.string, flags: flags, start: start)
        }

        /// Validates one multi-byte UTF-8 sequence at `pos` (Unicode table 3-7).
        private mutating func validateUTF8Sequence() throws(JSONError) {
            let start = pos
            let lead = bytes[pos]
            let invalid = JSONError(offset: start, reason: "invalid UTF-8")
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            let continuation: Int
            switch lead {
            case 0xC2...0xDF: continuation = 1
            case 0xE0: continuation = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: continuation = 2
            case 0xED: continuation = 2; high = 0x9F
            case 0xF0: continuation = 3; low = 0x90
            case 0xF1...0xF3: continuation = 3
            case 0xF4: continuation = 3; high = 0x8F
            default: throw invalid
            }
            guard pos + continuation < end else { throw invalid }
            let second = bytes[pos + 1]
            guard second >= low && second <= high else { throw invalid }
            var k = 2
            while k <= continuation {
                guard bytes[pos + k] & 0xC0 == 0x80 else { throw invalid }
                k += 1
            }
            pos += continuation + 1
        }

        private mutating func parseEscape() throws(JSONError) {
            let start = pos
            guard pos + 1 < end else { throw .unexpectedEnd(at: end) }
            switch bytes[pos + 1] {
            case Self.quote, Self.backslash, UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                pos += 2
            case UInt8(ascii: "u"):
                let unit = try readUnicodeEscape()
                if unit == 0 {
                    throw JSONError(offset: start, reason: "\\u0000 is not allowed")
                }
                if unit >= 0xDC00 && unit < 0xE000 {
                    throw JSONError(offset: start, reason: "lone surrogate in \\u escape")
                }
                if unit >= 0xD800 && unit < 0xDC00 {
                    guard pos + 1 < end, bytes[pos] == Self.backslash, bytes[pos + 1] == UInt8(ascii: "u") else {
                        throw JSONError(offset: start, reason: "lone surrogate in \\u escape")
                    }
                    let lowUnit = try readUnicodeEscape()
                    guard lowUnit >= 0xDC00 && lowUnit < 0xE000 else {
                        throw JSONError(offset: start, reason: "lone surrogate in \\u escape")
                    }
                }
            default:
                throw JSONError(offset: start, reason: "invalid escape sequence")
            }
        }

        /// Reads `\uXXXX` at `pos` and returns the code unit.
        private mutating func readUnicodeEscape() throws(JSONError) -> UInt16 {
            let start = pos
            guard pos + 6 <= end else { throw .unexpectedEnd(at: end) }
            var value: UInt16 = 0
            for k in pos + 2..<pos + 6 {
                let d = JSON.hexDigit(bytes[k])
                guard d != 0xFF else { throw JSONError(offset: start, reason: "invalid \\u escape") }
                value = value << 4 | UInt16(d)
            }
            pos += 6
            return value
        }

        // MARK: Duplicate keys

        /// Rejects the second occurrence of any key (compared after unescaping) in a closed object.
        private func checkDuplicateKeys(object index: Int) throws(JSONError) {
            let stop = Int(tape[index].next)
            var key = index + 1
            var count = 0
            while key < stop {
                var other = index + 1
                while other < key {
                    if sameKey(other, key) {
                        let text = String(decoding: unescapedKey(key), as: UTF8.self)
                        throw JSONError(offset: Int(tape[key].start), reason: "duplicate key \"\(text)\"")
                    }
                    other = Int(tape[other + 1].next)
                }
                count += 1
                if count > 64 { return try checkDuplicateKeysHashed(object: index) }
                key = Int(tape[key + 1].next)
            }
        }

        /// Large objects: one hash set instead of quadratic comparisons.
        private func checkDuplicateKeysHashed(object index: Int) throws(JSONError) {
            let stop = Int(tape[index].next)
            var seen = Set<[UInt8]>()
            var key = index + 1
            while key < stop {
                let text = unescapedKey(key)
                if !seen.insert(text).inserted {
                    throw JSONError(offset: Int(tape[key].start),
                                    reason: "duplicate key \"\(String(decoding: text, as: UTF8.self))\"")
                }
                key = Int(tape[key + 1].next)
            }
        }

        private func unescapedKey(_ i: Int) -> [UInt8] {
            let t = tape[i]
            let range = Int(t.start) + 1..<Int(t.end) - 1
            return t.flags & Token.escapedFlag == 0 ? Array(bytes[range]) : JSON.unescape(bytes, range)
        }

        private func sameKey(_ a: Int, _ b: Int) -> Bool {
            let ta = tape[a], tb = tape[b]
            if (ta.flags | tb.flags) & Token.escapedFlag != 0 {
                return unescapedKey(a) == unescapedKey(b)
            }
            let length = Int(ta.end - ta.start)
            guard length == Int(tb.end - tb.start) else { return false }
            var i = Int(ta.start) + 1, j = Int(tb.start) + 1
            let stop = Int(ta.end) - 1
            while i < stop {
                if bytes[i] != bytes[j] { return false }
                i += 1
                j += 1
            }
            return true
        }
    }
}
