import Foundation
import HeraldHTTP
import HTTPTypes
@testable import HeraldServer
import Testing

/// A write route's topic, filled in from its path parameters by hand, against Foundation's
/// `replacingOccurrences`, which it replaced.
@Suite struct RouteTopicTests {
    @Test func parametersFillTheTemplateAsFoundationDid() {
        let parameters = ["id": "u7", "name": "böse/ü", "a": "", "b": "v"]
        var request = Request(method: .put, path: "/units/u7")
        request.parameters = parameters
        let templates = ["units/{id}", "units", "auctions/{id}/bids", "{a}{b}", "{name}-{id}-{id}", "x{", "x}{", "units/{missing}",
                         "{", "}", "{}", "notifications/{name}", "{id", "a{b}c{a}d"]
        for template in templates {
            let oracle = parameters.keys.sorted().reduce(template) { $0.replacingOccurrences(of: "{\($1)}", with: parameters[$1] ?? "") }
            #expect(Routes.topic(template, of: request) == oracle, "\(template)")
        }
        // A value is put in as it is, never read again for names (Foundation's passes, one a name, did).
        request.parameters = ["a": "{b}", "b": "x"]
        #expect(Routes.topic("{a}/{b}", of: request) == "{b}/x")
    }
}
