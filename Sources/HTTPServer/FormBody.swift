/// HTML form submissions (`application/x-www-form-urlencoded`, the WHATWG URL standard's
/// serialization): `name=value&other=%C3%A9+x`.
extension HTTPRequest {
    /// The body's fields in order, `+` and percent escapes decoded; nil when the body is not a
    /// URL-encoded form.
    public var formItems: [QueryItem]? {
        guard let contentType = headers["Content-Type"],
              contentType.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: [" ", "\t"]).lowercased()
                == "application/x-www-form-urlencoded"
        else { return nil }
        let text = String(decoding: body, as: UTF8.self)
        return text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return QueryItem(name: PercentDecoding.decode(parts[0], plusAsSpace: true),
                             value: parts.count > 1 ? PercentDecoding.decode(parts[1], plusAsSpace: true) : "")
        }
    }

    /// The first form field named `name`, or nil (also when the body is not a form).
    public func formValue(_ name: String) -> String? {
        formItems?.first { $0.name == name }?.value
    }
}

private extension Substring {
    func trimmingCharacters(in set: Set<Character>) -> Substring {
        var text = self
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return text
    }
}
