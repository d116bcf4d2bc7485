import Postgres

extension SQL {
    /// `a, b, c` (or joined by `separator`, such as `" OR "`): the fragments in order, their
    /// placeholders renumbered.
    static func list(_ fragments: [SQL], separator: SQL = ", ") -> SQL {
        var list: SQL = ""
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { list.append(separator) }
            list.append(fragment)
        }
        return list
    }
}
