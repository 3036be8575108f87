import Glibc
@testable import HeraldHTTP
import Testing

/// The connection table keeps its entries in pages of socket numbers, made when a number of theirs is a
/// connection's and let go with the last: a stream's number (not a connection's) costs nothing in it.
@Suite struct ConnectionTableTests {
    /// `started` reads only the socket it is given; no libmicrohttpd connection is needed here.
    let connection = OpaquePointer(bitPattern: 0x10)!

    @Test func aPageIsMadeForItsFirstConnectionAndLetGoWithItsLast() {
        let table = ConnectionTable(timeout: .seconds(10), bodyTimeout: .seconds(10))
        for socket: Int32 in [3, 5, 70, 1_000] { table.started(connection, socket: socket, address: "10.0.0.\(socket % 2)") }
        #expect(table.count == 4)
        #expect(table.pagesInUse == 3)
        #expect(table.held(by: "10.0.0.1") == 2)  // 3 and 5
        table.closed(socket: 1_000)
        #expect(table.pagesInUse == 2)
        table.closed(socket: 3)
        #expect(table.pagesInUse == 2)  // 5 is still held
        table.closed(socket: 5)
        table.closed(socket: 5)  // twice: nothing more
        #expect(table.pagesInUse == 1)
        #expect(table.count == 1)
        #expect(table.held(by: "10.0.0.1") == 0)
        #expect(table.held(by: "10.0.0.0") == 1)
        // A number again, in a page let go: made again.
        table.started(connection, socket: 1_001, address: "10.0.0.1")
        #expect(table.pagesInUse == 2)
        #expect(table.count == 2)
    }

    /// The sweep and the making of room find connections on every page: one past its deadline on a
    /// high number is shut down (its peer reads the end), one in time on a low number is not.
    @Test func theSweepFindsConnectionsOnEveryPage() throws {
        var late: [Int32] = [0, 0]
        var early: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &late) == 0)
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &early) == 0)
        // The late one's end on a number far above the others, in a page of its own.
        let high = dup2(late[0], 900)
        try #require(high == 900)
        close(late[0])
        defer { for socket in [high, late[1], early[0], early[1]] { close(socket) } }
        let table = ConnectionTable(timeout: .seconds(10), bodyTimeout: .seconds(10))
        let now = Moment.now
        table.started(connection, socket: early[0], address: "a", at: now + .seconds(100))
        table.started(connection, socket: high, address: "b", at: now)
        table.sweep(at: now + .seconds(11))
        var byte: UInt8 = 0
        #expect(recv(late[1], &byte, 1, Int32(MSG_DONTWAIT)) == 0)  // shut down: the end
        #expect(recv(early[1], &byte, 1, Int32(MSG_DONTWAIT)) == -1)  // still open, nothing to read
        // Room: the idle one on the low page goes (the high one is closing already).
        #expect(table.closeIdle(5, grace: .zero, at: now + .seconds(200)) == 1)
        #expect(recv(early[1], &byte, 1, Int32(MSG_DONTWAIT)) == 0)
    }
}
