import EngageClient
import EngageCore
import Testing

/// EngageClient repeats the server's event vocabulary on purpose (the client links nothing of
/// the server). These tests keep the two copies equal: every closed vocabulary has the same
/// spellings on both sides, and every spelling the client can send, in the event it sends it in,
/// is accepted by the server's decoder and read back as that spelling.
@Suite struct VocabularyAgreementTests {
    @Test(arguments: WireVocabulary.allCases)
    func bothSidesSpellTheSameValues(_ vocabulary: WireVocabulary) {
        let client = ClientWire.vocabularies[vocabulary] ?? []
        let server = ServerWire.vocabularies[vocabulary] ?? []
        #expect(!client.isEmpty && !server.isEmpty, "\(vocabulary.rawValue): a side lists no spellings")
        #expect(client.subtracting(server).isEmpty,
                "\(vocabulary.rawValue): the client spells \(client.subtracting(server).sorted()), the server does not")
        #expect(server.subtracting(client).isEmpty,
                "\(vocabulary.rawValue): the server spells \(server.subtracting(client).sorted()), the client does not")
    }

    @Test func theServerReadsEverySpellingTheClientSends() {
        let samples = ClientWire.samples
        for vocabulary in WireVocabulary.allCases {
            #expect(Set(samples.filter { $0.vocabulary == vocabulary }.map(\.value)) == ClientWire.vocabularies[vocabulary],
                    "\(vocabulary.rawValue): a sample per client spelling")
        }
        for sample in samples {
            switch ServerWire.decode(sample.json) {
            case .success(let decoded):
                #expect(decoded[sample.vocabulary]?.contains(sample.value) == true,
                        "\(sample.vocabulary.rawValue) \(sample.value): the server read \(decoded[sample.vocabulary] ?? [])")
            case .failure(let problem):
                Issue.record("\(sample.vocabulary.rawValue) \(sample.value): the server rejects \(sample.json): \(problem)")
            }
        }
    }

    @Test func bothSidesNameTheSentAtHeaderAlike() {
        #expect(EngageClient.sentAtHeader == ClockCorrection.header)
    }
}
