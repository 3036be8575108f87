import CMicroHTTPD
import Glibc
@testable import HeraldHTTP
import Testing

/// A kept response carries each request's id: written over libmicrohttpd's copy of the field where
/// this libmicrohttpd keeps it where it shows it (checked at start, `writesInPlace`), or by replacing
/// the field; both ways the field reads as the id, of any length.
@Suite struct QuickResponsesTests {
    static func header(_ response: OpaquePointer) -> String? {
        MHD_get_response_header(response, "X-Request-ID").map { String(cString: $0) }
    }

    @Test func thisLibmicrohttpdKeepsAFieldWhereItShowsIt() {
        #expect(QuickResponses.writesInPlace, "0.9.75 (Debian 12) and 1.0.1 do; another may not, and then ids are replaced")
    }

    @Test(arguments: [true, false])
    func aKeptResponseCarriesEachIdInPlaceOrByReplacingTheField(inPlace: Bool) throws {
        let response = try #require(MHD_create_response_from_buffer(2, UnsafeMutableRawPointer(mutating: "{}"), MHD_ResponseMemoryMode.RESPMEM_PERSISTENT))
        #expect(MHD_add_response_header(response, "X-Request-ID", "a1") == MHD_Result.YES)
        let kept = QuickResponses.Kept(response: response, requestID: "a1", inPlace: inPlace)
        for id in ["b2", "c3", "d4e5f6", "g7", "h8"] {
            kept.carry(id)
            #expect(Self.header(response) == id)
            #expect(kept.requestID == id)
        }
    }
}
