import HTTPTypes
import HeraldDomain
import HeraldHTTP
@testable import HeraldServer
import HeraldStore
import Testing

/// A change the store could not take is answered by what failed: 503 with `Retry-After` when trying
/// again can work (another writer, a full disk, a read-only file), 500 when the store is damaged; the
/// log line (the cause) has SQLite's code, the client's detail does not.
@Suite struct StoreFailureTests {
    @Test func storeFailuresAreAnsweredByKind() {
        let cases: [(code: Int32, status: Int)] = [(5, 503), (6, 503), (13, 503), (8, 503), (11, 500), (26, 500), (10, 500)]
        for (code, status) in cases {
            let refusal = Journal.refusal(for: StoreError("disk I/O error", code: code), topic: "units/a")
            let problem = Problem(refusal)
            #expect(problem.status.code == status, "SQLite code \(code)")
            #expect((problem.headers[.retryAfter] != nil) == (status == 503), "SQLite code \(code)")
            #expect(refusal.cause?.contains("SQLite code \(code)") == true)
            #expect(!problem.detail.contains("SQLite"))
        }
    }
}
