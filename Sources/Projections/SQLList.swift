import Postgres

extension SQL {
    /// `a, b, c`: the fragments separated by commas, their placeholders renumbered in order.
    static func list(_ fragments: [SQL]) -> SQL {
        var list: SQL = ""
        for (index, fragment) in fragments.enumerated() {
            if index > 0 { list.append(", ") }
            list.append(fragment)
        }
        return list
    }
}
