import SeededRandom
import Testing
@testable import EngageCore

@Suite struct GrowthBookBucketingTests {
    @Test func fnv1a32MatchesSharedVectors() {
        for vector in Shared.fnv1a32 {
            #expect(GrowthBookBucketing.fnv1a32(vector.input) == vector.hash, "\(vector.input)")
        }
        // Multi-byte UTF-8 is hashed byte by byte (value from an independent Python run).
        #expect(GrowthBookBucketing.fnv1a32("héllo 🚀") == 1_305_701_375)
    }

    @Test func hashesMatchSharedVectors() {
        for vector in Shared.hashV1 {
            #expect(GrowthBookBucketing.hashV1(seed: vector.seed, id: vector.id) == vector.value)
        }
        for vector in Shared.hashV2 {
            #expect(GrowthBookBucketing.hashV2(seed: vector.seed, id: vector.id) == vector.value)
        }
    }

    @Test func hashesMatchGrowthBookConformanceCases() {
        for vector in Independent.growthBookHashes {
            let value = vector.version == 1
                ? GrowthBookBucketing.hashV1(seed: vector.seed, id: vector.id)
                : GrowthBookBucketing.hashV2(seed: vector.seed, id: vector.id)
            #expect(value == vector.value, "\(vector)")
        }
    }

    @Test func hashesLieInTheUnitInterval() {
        var generator = SplitMix64(seed: 2024)
        for _ in 0..<5000 {
            let id = String(generator.next(), radix: 36)
            let seed = String(generator.next() % 1000)
            let v1 = GrowthBookBucketing.hashV1(seed: seed, id: id)
            let v2 = GrowthBookBucketing.hashV2(seed: seed, id: id)
            #expect(v1 >= 0 && v1 < 1)
            #expect(v2 >= 0 && v2 < 1)
        }
    }

    @Test func bucketRangesMatchGrowthBookConformanceCases() {
        for vector in Independent.bucketRanges {
            let weights = vector.weights ?? Array(repeating: 1 / Double(vector.count), count: vector.count)
            let ranges = GrowthBookBucketing.bucketRanges(weights: weights, coverage: vector.coverage)
            #expect(ranges.count == vector.ranges.count, "\(vector.name)")
            for (range, expected) in zip(ranges, vector.ranges) {
                #expect(abs(range.start - expected[0]) < 1e-12, "\(vector.name)")
                #expect(abs(range.end - expected[1]) < 1e-12, "\(vector.name)")
            }
        }
    }

    @Test func chooseVariationMatchesGrowthBookConformanceCases() {
        for vector in Independent.chooseVariation {
            let ranges = vector.ranges.map { GrowthBookBucketing.BucketRange(start: $0[0], end: $0[1]) }
            let index = GrowthBookBucketing.chooseVariation(n: vector.n, ranges: ranges)
            #expect(index == (vector.index < 0 ? nil : vector.index), "\(vector.name)")
        }
    }

    @Test func experimentAssignmentsMatchGrowthBook() {
        let ranges = GrowthBookBucketing.bucketRanges(weights: [1.0 / 3, 1.0 / 3, 1.0 / 3])
        for vector in Independent.experimentAssignments {
            let bucket = GrowthBookBucketing.hashV1(seed: "feature", id: vector.id)
            #expect(bucket == vector.bucket)
            #expect(GrowthBookBucketing.chooseVariation(n: bucket, ranges: ranges) == vector.variation)
        }
    }

    @Test func nanCoverageIncludesNobody() {
        let ranges = GrowthBookBucketing.bucketRanges(weights: [0.5, 0.5], coverage: .nan)
        #expect(GrowthBookBucketing.chooseVariation(n: 0.3, ranges: ranges) == nil)
    }
}
