import Testing
@testable import EngageCore

/// A strategy added from outside the catalog: the smallest variant the system accepts.
struct SmallestAcceptedStrategy: AttachmentStrategyModel {
    var name: String { "smallest" }
    func choose(_ input: PipelineInput, limits: PipelineLimits) -> VariantChoice {
        var best: Int?
        for i in input.media.indices where PipelineModel.attachFailure(input.media[i], limits: limits) == nil {
            if best == nil || input.media[i].bytes < input.media[best!].bytes { best = i }
        }
        return best.map(VariantChoice.variant) ?? .noAttachment
    }
}

@Suite struct StrategyCatalogTests {
    @Test func standardCatalogHasTheSchemaStrategies() {
        let catalog = StrategyCatalog.standard
        #expect(catalog.names == ["adaptive", "cached", "full", "none", "poster", "thumbnail"])
        for strategy in AttachmentStrategy.allCases {
            #expect(catalog[strategy]?.name == strategy.rawValue)
            #expect(catalog[strategy.rawValue]?.name == strategy.rawValue)
        }
        #expect(catalog["largest"] == nil)
    }

    @Test func aNewStrategyIsOneTypeAdded() {
        let catalog = StrategyCatalog.standard.adding(SmallestAcceptedStrategy())
        #expect(catalog.names.contains("smallest"))
        #expect(StrategyCatalog.standard["smallest"] == nil)
        let media = [
            MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: 900_000),
            MediaVariant(variant: "tiny", kind: .audio, format: .mp4, bytes: 1_000),
            MediaVariant(variant: "small", kind: .image, format: .png, bytes: 50_000),
        ]
        let input = PipelineInput(media: media, network: .typical(for: .wifi))
        let outcome = PipelineModel.run(input, strategy: catalog["smallest"]!, limits: PipelineLimits())
        #expect(outcome.variantIndex == 2)
        #expect(outcome.outcome == .attached)
    }

    @Test func laterModelsReplaceEarlierOnesOfTheSameName() {
        let catalog = StrategyCatalog([AdaptiveStrategy(safetyFactor: 1), AdaptiveStrategy(safetyFactor: 3)])
        #expect(catalog.names == ["adaptive"])
        #expect((catalog["adaptive"] as? AdaptiveStrategy)?.safetyFactor == 3)
    }
}
