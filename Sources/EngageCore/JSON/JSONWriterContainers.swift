/// Objects and arrays written from closures, so that a writer of nested JSON reads as its shape.
extension JSONWriter {
    /// `{...}` with the members `write` adds.
    public mutating func object(_ write: (inout JSONWriter) -> Void) {
        beginObject()
        write(&self)
        endObject()
    }

    /// `{...}` with the members `write` adds for `value`, or `null` for nil.
    public mutating func optionalObject<Value>(_ value: Value?, _ write: (inout JSONWriter, Value) -> Void) {
        guard let value else { return null() }
        object { write(&$0, value) }
    }

    /// `[...]` with what `write` adds for each of `values`.
    public mutating func array<Values: Sequence>(_ values: Values, _ write: (inout JSONWriter, Values.Element) -> Void) {
        beginArray()
        for value in values { write(&self, value) }
        endArray()
    }

    /// `[{...}, ...]`: an object for each of `values`, with the members `write` adds.
    public mutating func objects<Values: Sequence>(_ values: Values, _ write: (inout JSONWriter, Values.Element) -> Void) {
        array(values) { json, value in json.object { write(&$0, value) } }
    }

    /// `["...", ...]`.
    public mutating func strings<Values: Sequence<String>>(_ values: Values) {
        array(values) { json, value in json.string(value) }
    }
}
