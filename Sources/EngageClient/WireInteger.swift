/// The server's rule for an integer in an event: 0 to 2^53, the whole numbers a JSON number
/// holds exactly. A count the client did not make itself (a media host's `Content-Length`, a
/// push payload's `bytes`) is checked before an event carries it: the server refuses the event
/// with any other.
package enum WireInteger {
    package static let maximum = 1 << 53

    /// `value` when the server takes it; nil otherwise.
    package static func acceptable(_ value: Int) -> Int? {
        (0...maximum).contains(value) ? value : nil
    }
}
