extension PostgresConfiguration {
    /// Key/value pairs with the password's value replaced by `***`, everything else as written.
    /// Read as libpq reads them: white space around `=`, values quoted (`'my s3cret'`, with `\`
    /// escapes) or not; splitting on spaces printed `password = s3cret` and the end of
    /// `password='my s3cret'`. A `password` keyword libpq would refuse (no `=`) hides the rest.
    static func redactingKeywordPassword(_ connectionString: String) -> String {
        let bytes = Array(connectionString.utf8)
        let equals = UInt8(ascii: "="), quote = UInt8(ascii: "'"), backslash = UInt8(ascii: "\\")
        let hidden = Array("***".utf8)
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        var output: [UInt8] = []
        var index = 0
        func copySpaces() {
            while index < bytes.count, isSpace(bytes[index]) {
                output.append(bytes[index])
                index += 1
            }
        }
        while true {
            copySpaces()
            guard index < bytes.count else { break }
            let keywordStart = index
            while index < bytes.count, bytes[index] != equals, !isSpace(bytes[index]) { index += 1 }
            let isPassword = bytes[keywordStart..<index].elementsEqual("password".utf8)
            output += bytes[keywordStart..<index]
            copySpaces()
            guard index < bytes.count, bytes[index] == equals else {
                if isPassword, index < bytes.count { return String(decoding: output + hidden, as: UTF8.self) }
                continue
            }
            output.append(equals)
            index += 1
            copySpaces()
            let valueStart = index
            if index < bytes.count, bytes[index] == quote {
                index += 1
                while index < bytes.count, bytes[index] != quote { index += bytes[index] == backslash ? 2 : 1 }
                index = min(index + 1, bytes.count)
            } else {
                while index < bytes.count, !isSpace(bytes[index]) { index += bytes[index] == backslash ? 2 : 1 }
                index = min(index, bytes.count)
            }
            output += isPassword ? hidden[...] : bytes[valueStart..<index]
        }
        return String(decoding: output, as: UTF8.self)
    }
}
