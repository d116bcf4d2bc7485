import Testing
@testable import EngageCore

/// A report's category filter is written as ingestion writes stored categories.
@Suite struct CategoryFilterTests {
    /// A decomposed "café" (e + U+0301) finds the category ingestion stored composed; it found
    /// nothing before (PostgreSQL compares bytes).
    @Test func aDecomposedFilterIsComposedAsStoredCategoriesAre() {
        #expect(CategoryFilter.normalized("cafe\u{301}") == "caf\u{E9}")
        #expect(CategoryFilter.normalized("new_photo") == "new_photo")
    }

    @Test(arguments: ["", "a\u{0}b", "tab\there", "del\u{7F}", "c1\u{85}"])
    func aFilterThatCanMatchNoStoredCategoryIsRefused(value: String) {
        #expect(CategoryFilter.normalized(value) == nil)
    }

    /// Ingestion refuses bidirectional controls now; categories stored before may hold them.
    @Test func aCategoryStoredBeforeBidirectionalControlsWereRefusedCanStillBeFiltered() {
        #expect(CategoryFilter.normalized("promo\u{202E}") == "promo\u{202E}")
    }
}
