import HTTPServer

/// How a JSON body must come to the routes that read one besides ingestion (an experiment's
/// definition, the devices of a batch of assignments): one `Content-Type` line naming
/// `application/json` (or a `+json` type), and no content coding. Anything else is refused with
/// 415 before the body is read: a body labelled as a form, or as gzip, is not the JSON it may
/// look like, and reading it anyway would answer for what the client did not say.
enum JSONRequestBody {
    static func problem(_ request: HTTPRequest, sending what: String) -> HTTPProblem? {
        let contentTypes = request.headers.values(for: "Content-Type")
        guard IngestRoute.bodyFormat(contentType: contentTypes.count == 1 ? contentTypes[0] : nil) == .json else {
            return APIProblems.unsupportedMediaType("send \(what) with Content-Type: application/json")
        }
        if let coding = IngestRoute.contentEncoding(request.headers).map(IngestRoute.trimmedLowercase), !["", "identity"].contains(coding) {
            return APIProblems.unsupportedMediaType("Content-Encoding \(coding) is not supported here; send the JSON as it is")
        }
        return nil
    }
}
