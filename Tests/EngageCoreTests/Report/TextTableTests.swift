import EngageCore
import Testing

/// The one table renderer, as the CLI's listings use it (the report's tables are pinned by
/// ReportTableTests).
@Suite struct TextTableTests {
    @Test func listingsAlignLeftByCharacterAndEndWithoutSpaces() {
        var table = TextTable(header: ["KEY ID", "APP", "NAME"])
        table.append(["k-1", "grüße-app", "first"])
        table.append(["k-22", "😀", ""])
        #expect(table.render() == """
            KEY ID  APP        NAME
            k-1     grüße-app  first
            k-22    😀
            """)
    }

    @Test func columnsAlignLeftOrRightWithAnIndent() {
        var table = TextTable([.left, .right])
        table.append(["rich", "1"])
        table.append(["plain", "100"])
        #expect(table.lines(indent: "  ") == ["  rich     1", "  plain  100"])
    }
}
