/// A statement whose values can only travel as `$n` parameters.
///
/// Interpolating a value appends a placeholder and records the value:
///
///     let sql: SQL = "SELECT * FROM events WHERE app_id = \(appID) LIMIT \(limit)"
///
/// Text that is not a literal in source code can only enter through `init(unsafeSQL:)` or
/// `\(unsafeSQL:)`, names chosen to stand out in review. Identifiers are quoted with `\(identifier:)`.
public struct SQL: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var text: String
    public private(set) var parameters: [PostgresParameter]

    public init(stringLiteral value: StaticString) {
        self.text = value.description
        self.parameters = []
    }

    public init(stringInterpolation: StringInterpolation) {
        self.text = stringInterpolation.text
        self.parameters = stringInterpolation.parameters
    }

    /// Raw SQL text from a runtime string: migrations and statements assembled from trusted parts only.
    public init(unsafeSQL text: String) {
        self.text = text
        self.parameters = []
    }

    /// Appends another statement fragment, renumbering its placeholders.
    public mutating func append(_ other: SQL) {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        interpolation.text = text
        interpolation.parameters = parameters
        interpolation.appendInterpolation(fragment: other)
        text = interpolation.text
        parameters = interpolation.parameters
    }

    public var description: String {
        parameters.isEmpty ? text : "\(text) [\(parameters.count) parameter(s) redacted]"
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var text = ""
        var parameters: [PostgresParameter] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: StaticString) {
            text += literal.description
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            parameters.append(value.postgresParameter)
            text += "$\(parameters.count)"
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            parameters.append(value?.postgresParameter ?? .null)
            text += "$\(parameters.count)"
        }

        /// A quoted identifier (table, column, channel): doubled quotes, never a parameter.
        public mutating func appendInterpolation(identifier: String) {
            text += "\"" + identifier.replacingAll("\"", with: "\"\"") + "\""
        }

        /// A nested statement fragment whose placeholders are renumbered.
        public mutating func appendInterpolation(fragment: SQL) {
            let offset = parameters.count
            parameters += fragment.parameters
            text += offset == 0 ? fragment.text : Self.renumber(fragment.text, by: offset)
        }

        /// Raw text: only for trusted, program-built SQL.
        public mutating func appendInterpolation(unsafeSQL raw: String) {
            text += raw
        }

        private static func renumber(_ text: String, by offset: Int) -> String {
            var result = ""
            var iterator = text.unicodeScalars.makeIterator()
            var pending: Unicode.Scalar? = iterator.next()
            while let scalar = pending {
                pending = iterator.next()
                guard scalar == "$", let first = pending, ("0"..."9").contains(first) else {
                    result.unicodeScalars.append(scalar)
                    continue
                }
                var digits = ""
                while let digit = pending, ("0"..."9").contains(digit) {
                    digits.unicodeScalars.append(digit)
                    pending = iterator.next()
                }
                result += "$\(Int(digits)! + offset)"
            }
            return result
        }
    }
}

extension String {
    /// Scalar by scalar: a quote followed by a combining mark is one `Character` equal to no quote.
    func replacingAll(_ target: Unicode.Scalar, with replacement: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            if scalar == target { result.append(contentsOf: replacement.unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }
}
