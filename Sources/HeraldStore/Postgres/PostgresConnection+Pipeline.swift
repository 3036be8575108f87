import CLinux
import CPostgres
import Foundation

// Pipeline mode: statements sent without waiting, their answers read together.
extension PostgresConnection {
    /// Enters pipeline mode (outside a pipeline, with no statement in flight).
    func enterPipeline() throws(StoreError) {
        guard !pipelined else { return }
        guard PQenterPipelineMode(handle) == 1 else {
            throw StoreError("PostgreSQL: cannot enter pipeline mode: \(Self.message(handle))", kind: isConnected ? .other : .unreachable)
        }
        pipelined = true
    }

    /// Leaves pipeline mode, reading first whatever is still queued (its failures are dropped).
    func exitPipeline() {
        guard pipelined else { return }
        if !unread.isEmpty { _ = try? flush() }
        failure = nil
        // Refused only by a broken connection (nothing is queued now); `reconnectIfBroken` starts anew.
        _ = PQexitPipelineMode(handle)
        pipelined = false
    }

    /// Queues statements in the pipeline, all or none: a text parameter holding a NUL byte is refused
    /// before any is sent (PostgreSQL's text cannot hold one: it would fail the whole round trip, not
    /// just its own change); when one cannot be sent after others were, the failure is kept, so that
    /// the batch does not commit a part of them.
    func send(_ statements: [Statement]) throws(StoreError) {
        for statement in statements {
            for case .text(let text) in statement.parameters where text.utf8.contains(0) {
                throw StoreError("PostgreSQL: a text value holds a NUL byte, which PostgreSQL cannot store", kind: .other)
            }
        }
        for (index, statement) in statements.enumerated() {
            do throws(StoreError) {
                try send(statement.sql, statement.parameters)
            } catch {
                // Some of them are queued: the round trip must not commit a part of them.
                if index > 0, failure == nil { failure = error }
                throw error
            }
        }
    }

    /// Queues one statement in the pipeline, without waiting for its answer. The first time a statement
    /// is sent `prepared` on this connection, it is prepared first, in the same round trip. A read that
    /// picks rows by a range of its parameter (`revision > $1`) is better planned each time: a prepared
    /// one may get PostgreSQL's generic plan, which guesses a third of the table and scans it all.
    func send(_ sql: String, _ parameters: [Parameter] = [], prepared usePrepared: Bool = true) throws(StoreError) {
        let name = usePrepared ? try preparedName(sql, parameterCount: parameters.count) : nil
        let sent = Self.withParameters(parameters) { count, values, lengths, formats in
            guard let name else { return PQsendQueryParams(handle, sql, count, nil, values, lengths, formats, 0) }
            return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0)
        }
        guard sent == 1 else { throw connectionFailure }
        unread.append(.statement)
    }

    /// The name `sql` is prepared under on this connection; queues its preparation the first time.
    func preparedName(_ sql: String, parameterCount: Int) throws(StoreError) -> String {
        if let known = prepared[sql] { return known }
        preparations += 1
        let name = "herald_\(preparations)"
        guard PQsendPrepare(handle, name, sql, Int32(parameterCount), nil) == 1 else { throw connectionFailure }
        prepared[sql] = name
        unread.append(.preparation(sql))
        return name
    }

    /// Ends the pipeline's round trip: asks PostgreSQL to answer everything queued, and reads the
    /// answers. Returns the rows of each statement, in order. Throws the first failure among them
    /// (also kept for `takeFailure()`).
    ///
    /// With a `wake` descriptor (an eventfd), whenever it is signalled while an answer is awaited,
    /// `whileWaiting` runs on this thread (a batch waiting for the write lock takes in what other
    /// replicas commit meanwhile); it must not use this connection.
    @discardableResult
    func flush(wake: Int32 = -1, whileWaiting: () -> Void = {}) throws(StoreError) -> [Rows] {
        let sent = unread
        unread = []
        guard PQpipelineSync(handle) == 1 else {
            for case .preparation(let sql) in sent { prepared[sql] = nil }
            throw connectionFailure
        }
        var answers: [Rows] = []
        var first: StoreError?
        answers.reserveCapacity(sent.count)
        for (index, item) in sent.enumerated() {
            if wake >= 0 { awaitAnswer(wake: wake, whileWaiting) }
            // Each answer is one result, then a null.
            var answered = false
            var succeeded = false
            while let result = PQgetResult(handle) {
                defer { PQclear(result) }
                answered = true
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    if first == nil {
                        first = StoreError("PostgreSQL: a statement was not run, after an earlier one failed", kind: .other)
                    }
                    continue
                }
                do throws(StoreError) {
                    try check(result)
                    succeeded = true
                    if case .statement = item { answers.append(Self.rows(result)) }
                } catch {
                    if first == nil { first = error }
                }
            }
            if case .preparation(let sql) = item, !succeeded { prepared[sql] = nil }
            if !answered {
                // The connection broke: nothing more will come.
                for case .preparation(let sql) in sent[index...] { prepared[sql] = nil }
                let broken = connectionFailure
                if failure == nil { failure = first ?? broken }
                throw first ?? broken
            }
        }
        // The sync's own result.
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let first {
            if failure == nil { failure = first }
            throw first
        }
        return answers
    }

    /// Returns when an answer can be read without waiting (or the connection failed, which reading
    /// then reports), running `whileWaiting` each time `wake` is signalled meanwhile.
    func awaitAnswer(wake: Int32, _ whileWaiting: () -> Void) {
        let socket = PQsocket(handle)
        guard socket >= 0 else { return }
        while PQisBusy(handle) == 1 {
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 2, -1) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 {
                cepoll_eventfd_drain(wake)
                whileWaiting()
            }
            if descriptors[0].revents != 0, PQconsumeInput(handle) != 1 { return }
        }
    }
}
