/// Text bound for a terminal, with every control character but newline and tab written out as
/// `\u{1B}`: a message that echoes what the user typed (an argument, a file name, a date) must
/// not move the cursor, retitle the window or hide the rest of the line when it is printed.
public enum TerminalText {
    public static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var shown = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                shown.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                shown.append(scalar)
            }
        }
        return String(shown)
    }

    /// C0 (but newline and tab), DEL and C1: the characters a terminal acts on.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: false
        case 0..<0x20, 0x7F...0x9F: true
        default: false
        }
    }
}
